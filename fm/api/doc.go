// Package api is the fabric manager's HTTP interface: the JSON API,
// /healthz, Prometheus metrics, the OpenAPI document and the web page,
// over any Backend (fm.Service), with the redirects of a replicated
// store's standbys to their leader.
package api
