// Package drivertest holds hand-written fakes for tests of the CSI driver
// and of the tools that drive it.
package drivertest
