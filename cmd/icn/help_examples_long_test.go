//go:build long

package main

// runLongExamples: with -tags long, TestHelpExamples runs the long
// examples too.
const runLongExamples = true
