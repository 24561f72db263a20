// Package par runs independent work items on all available cores.
package par
