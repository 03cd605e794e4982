// tus-js-client driver for test/e2e/tus_clients_test.go.
//
// usage: node client.mjs ENDPOINT TOKEN FILE BUCKET KEY CHUNK [URL|-] [KILL_AT]
// Uploads FILE (resuming URL if given) in CHUNK-byte PATCHes and prints
// the upload URL. With KILL_AT, the process kills itself (SIGKILL) once
// more than KILL_AT bytes were sent, mid-request, after printing the URL.
import fs from "node:fs";
import { Upload } from "tus-js-client";

const [endpoint, token, file, bucket, key, chunk, url, killAt] = process.argv.slice(2);
const data = fs.readFileSync(file);
const upload = new Upload(data, {
  endpoint,
  uploadUrl: url && url !== "-" ? url : null,
  chunkSize: Number(chunk),
  retryDelays: null,
  headers: { Authorization: "Bearer " + token },
  metadata: { bucket, key, filetype: "application/x-tus-js" },
  onProgress(sent) {
    if (killAt && sent > Number(killAt)) {
      console.log("KILLED " + upload.url);
      process.kill(process.pid, "SIGKILL");
    }
  },
  onError(err) {
    console.error("upload failed: " + err);
    process.exit(1);
  },
  onSuccess() {
    console.log(upload.url);
  },
});
upload.start();
