//go:build prod

package main

// prodBuild: see build_dev.go.
const prodBuild = true
