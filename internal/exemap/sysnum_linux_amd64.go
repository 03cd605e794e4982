//go:build linux

package exemap

const sysUserfaultfd = 323 // SYS_userfaultfd
