//go:build !(linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind)

package sqlite

// trimCHeap does nothing where modernc.org/libc's allocator is another one
// (libctrim_linux.go).
func trimCHeap() (bool, error) { return false, nil }
