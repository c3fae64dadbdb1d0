//go:build !prod

package main

// prodBuild says whether this binary was built with -tags prod (no
// embedded Temporal server); memocart cluster runs only such a binary as
// its api and worker.
const prodBuild = false
