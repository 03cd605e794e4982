//go:build linux

package exemap

const sysUserfaultfd = 282 // SYS_userfaultfd
