//go:build !linux

package exemap

func init() { result.Err = "not Linux" }
