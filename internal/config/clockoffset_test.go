package config

import "testing"

// TestClockOffsetFlag: --clock-offset (COFFER_CLOCK_OFFSET, test only)
// takes a duration either way, at most a day.
func TestClockOffsetFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		ok   bool
	}{
		{nil, nil, true},
		{[]string{"--clock-offset", "2h"}, nil, true},
		{nil, map[string]string{"COFFER_CLOCK_OFFSET": "-30s"}, true},
		{[]string{"--clock-offset", "25h"}, nil, false},
		{nil, map[string]string{"COFFER_CLOCK_OFFSET": "-24h1s"}, false},
	} {
		err := parseValidate(t, tc.args, tc.env)
		if (err == nil) != tc.ok || err != nil && !contains(err.Error(), "clock-offset") {
			t.Errorf("%v %v: Validate = %v, want ok %v", tc.args, tc.env, err, tc.ok)
		}
	}
}

// parseValidate parses the flags args and the environment env over the
// defaults and returns Validate's verdict.
func parseValidate(t *testing.T, args []string, env map[string]string) error {
	t.Helper()
	c := Defaults()
	fs := c.FlagSet("coffer serve")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if err := ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("%v: %v", env, err)
	}
	return c.Validate()
}
