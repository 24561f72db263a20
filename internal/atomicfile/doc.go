// Package atomicfile writes files that readers see whole or not at all.
package atomicfile
