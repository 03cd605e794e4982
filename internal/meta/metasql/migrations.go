package metasql

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// Migrations returns the migrations/*.sql of files in version order. File names
// are NNNN_description.sql with a unique positive NNNN.
func Migrations(files fs.FS) ([]Migration, error) {
	names, err := fs.Glob(files, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int64]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Pending returns the migrations of ms whose versions are not applied, in
// order, and fails if applied holds a version ms does not know (a newer
// binary migrated the database). who names the backend in the error.
func Pending(who string, ms []Migration, applied []int64) ([]Migration, error) {
	known := map[int64]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	done := map[int64]bool{}
	for _, v := range applied {
		done[v] = true
		if !known[v] {
			return nil, errcode.New(errcode.Internal, "%s: database has schema version %d, which this binary does not know (a newer coffer migrated it)", who, v)
		}
	}
	var out []Migration
	for _, m := range ms {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}
