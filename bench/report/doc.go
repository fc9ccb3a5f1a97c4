// Package report turns one benchmark run into bench/results/<date>.md (one
// table of scenarios × systems with ratios to the local ceiling, request
// counts per phase, peak RSS of each FUSE process, the flags of every
// system), a PNG chart of the ratios drawn with image/png and a built-in
// bitmap font, and a JSON file with the raw figures.
package report
