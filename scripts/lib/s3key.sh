# Sourced by the bench scripts that run two local servers side by side.
# wait_ready URL…: waits (at most 20 s) until every URL's /readyz answers.
# s3_key URL: signs up a user on the Coffer server at URL (its file API)
# and prints an S3 access key ID and secret for it ("KID SECRET").
wait_ready() {
  local u ok
  for _ in $(seq 100); do
    ok=1
    for u in "$@"; do curl -sf "$u/readyz" >/dev/null || ok=; done
    [ -n "$ok" ] && return 0
    sleep 0.2
  done
}

s3_key() {
  local j='Content-Type: application/json' b="$1/api/v1" token
  local cred='{"email":"bench@example.com","password":"bench password 123"}'
  curl -sf -H "$j" -d "$cred" "$b/auth/signup" >/dev/null
  token=$(curl -sf -H "$j" -d "$cred" "$b/auth/login" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  curl -sf -X POST -H "$j" -H "Authorization: Bearer $token" -d '{"name":"bench"}' "$b/keys" |
    python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["access_key_id"], k["secret_access_key"])'
}
