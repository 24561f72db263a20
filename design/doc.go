// Package design owns symmetric block designs B(N, m, λ) (finite fields,
// Singer difference sets, known biplanes, a verifier, Bruck–Ryser–Chowla)
// and the networks built from them in seed 000: distributed full switches,
// quasi-complete digraphs, sparse multirings and the Gemini / Blue Waters
// what-if designs.
package design
