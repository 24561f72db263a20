// Package atomicfile writes the output files of icn: regular files are
// replaced whole (readers see the old file or the new one, never a part),
// character devices and named pipes are written in place and never
// replaced, and Check finds before the work whether an output can be
// written at all. Every writer of an output file goes through it.
package atomicfile
