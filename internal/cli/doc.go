// Package cli holds the output conventions shared by every icn command:
// aligned tables by default, exact JSON with --json, progress on stderr and
// charts written as SVG or PNG.
package cli
