// Package client holds the fabric manager's wire types and the one HTTP
// client the command line, the Slurm agent and the fabric watcher use to
// reach a fabric manager, its leader or any of its standbys.
package client
