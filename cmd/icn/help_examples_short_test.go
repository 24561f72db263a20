//go:build !long

package main

// runLongExamples: without -tags long, TestHelpExamples leaves out the
// long examples.
const runLongExamples = false
