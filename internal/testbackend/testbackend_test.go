package testbackend

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestPostgresRestart(t *testing.T) {
	pg := StartPostgres(t)
	url := pg.CreateDatabase(t)
	ctx := context.Background()
	query := func() error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var n int
		return c.QueryRow(ctx, "SELECT 1").Scan(&n)
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	if err := query(); err == nil {
		t.Fatal("query succeeded on a stopped server")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}
}

func TestMinIOLive(t *testing.T) {
	m := SharedMinIO(t)
	resp, err := http.Get(m.Endpoint() + "/minio/health/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	m.Stop()
	if _, err := http.Get(m.Endpoint() + "/minio/health/live"); err == nil {
		t.Fatal("minio still answers after Stop")
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
}
