//go:build !linux

package exemap

func init() { result.Err = "not Linux" }

// Release does nothing here.
func Release() (int64, error) { return 0, nil }

// Resident returns 0 here.
func Resident() (int64, error) { return 0, nil }
