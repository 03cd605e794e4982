package s3compat

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// testRclone: copy a tree up (with a file large enough for multipart),
// check it by MD5, sync a deletion, a modification and an addition, check
// again, and copy everything back down.
func (e *env) testRclone(t *testing.T) {
	bin := tool(t, "rclone")
	b := e.bucket("rclone")
	home := t.TempDir()
	cfg := filepath.Join(home, "rclone.conf")
	writeFile(t, cfg, []byte("[coffer]\ntype = s3\nprovider = Other\nenv_auth = false\n"+
		"access_key_id = "+e.accessKey+"\nsecret_access_key = "+e.secretKey+"\n"+
		"endpoint = "+e.srv.S3URL+"\nregion = us-east-1\nforce_path_style = true\n"))
	rc := &runner{
		e: e, name: "rclone", bin: bin, dir: home, bucket: b, timeout: 4 * time.Minute,
		// Few retries: a server error must surface, not be retried away.
		pre: []string{"--config", cfg, "--retries", "1", "--low-level-retries", "2", "--contimeout", "15s", "--timeout", "2m",
			"--s3-upload-cutoff", "8M", "--s3-chunk-size", "5M", "--cache-dir", filepath.Join(home, "cache")},
		env: childEnv(map[string]string{"HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}),
	}
	remote := "coffer:" + b + "/tree"
	local := filepath.Join(t.TempDir(), "tree")
	files := makeTree(t, local, 60, 11, true)
	writeRandom(t, filepath.Join(local, "big", "multipart.bin"), 21<<20, 3) // 5 parts of 5 MiB
	big, _ := os.ReadFile(filepath.Join(local, "big", "multipart.bin"))
	files["big/multipart.bin"] = big

	rc.run(t, "mkdir", "coffer:"+b)
	rc.run(t, "copy", local, remote)
	e.rcloneCheck(t, rc, local, remote, len(files))

	// Sync a deletion, a change of size, a same-size change and a new file.
	names := sortedKeys(files)
	del, grow, same := names[3], names[10], ""
	for _, k := range names[20:] {
		if len(files[k]) > 0 {
			same = k
			break
		}
	}
	os.Remove(filepath.Join(local, filepath.FromSlash(del)))
	delete(files, del)
	files[grow] = append(append([]byte(nil), files[grow]...), "grown"...)
	writeFile(t, filepath.Join(local, filepath.FromSlash(grow)), files[grow])
	changed := append([]byte(nil), files[same]...)
	changed[0] ^= 0xFF
	files[same] = changed
	writeFile(t, filepath.Join(local, filepath.FromSlash(same)), changed)
	future := time.Now().Add(2 * time.Second) // a newer modtime than the uploaded copy
	os.Chtimes(filepath.Join(local, filepath.FromSlash(same)), future, future)
	files["new dir/new file ✓.txt"] = []byte("added after the first copy\n")
	writeFile(t, filepath.Join(local, "new dir", "new file ✓.txt"), files["new dir/new file ✓.txt"])

	rc.run(t, "sync", local, remote)
	lsf := rc.run(t, "lsf", "-R", "--files-only", remote)
	got := strings.Split(strings.TrimRight(lsf.stdout, "\n"), "\n")
	sort.Strings(got)
	if want := sortedKeys(files); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rclone lsf after sync: %d files, want %d\n got: %q\nwant: %q", len(got), len(want), got, want)
	}
	for _, k := range []string{grow, same} {
		if cat := rc.run(t, "cat", remote+"/"+k); cat.stdout != string(files[k]) {
			t.Errorf("rclone cat %s after sync: %d bytes sha256 %.12s, want %d bytes %.12s", k, len(cat.stdout), shaHex([]byte(cat.stdout)), len(files[k]), shaHex(files[k]))
		}
	}
	e.rcloneCheck(t, rc, local, remote, len(files))

	down := filepath.Join(t.TempDir(), "down")
	rc.run(t, "copy", remote, down)
	compareTree(t, "rclone copy down", files, down)
}

// rcloneCheck runs `rclone check` (sizes and MD5 hashes: ETags, and the
// md5chksum metadata rclone stores for multipart uploads) and requires
// every file to match.
func (e *env) rcloneCheck(t *testing.T, rc *runner, local, remote string, n int) {
	t.Helper()
	combined := filepath.Join(t.TempDir(), "combined.txt")
	res := rc.run(t, "check", "--checksum", "--combined", combined, local, remote)
	if strings.Contains(res.stderr, "could not be checked") || strings.Contains(res.stderr, "No common hash") {
		t.Errorf("rclone check did not compare hashes:\n%s", res)
	}
	if !strings.Contains(res.stderr, "0 differences found") {
		t.Errorf("rclone check: no \"0 differences found\":\n%s", res)
	}
	for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		t.Logf("rclone check: %s", l)
	}
	b, err := os.ReadFile(combined)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	matched := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "= ") {
			matched++
		} else {
			t.Errorf("rclone check: %q", l)
		}
	}
	if matched != n {
		t.Errorf("rclone check: %d files matched, want %d\n%s", matched, n, res)
	}
}
