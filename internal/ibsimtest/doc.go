// Package ibsimtest runs the InfiniBand fabric simulator (ibsim), OpenSM
// and ibnetdiscover on it, for tests that use them as the real consumers
// of icn's tables.
package ibsimtest
