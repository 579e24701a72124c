#!/usr/bin/env bash
# Makes a job's certificates for TLS with mutual authentication:
#   scripts/make-certs.sh DIR SERVERS WORKERS
# writes DIR/ca.pem (the job's CA; its key DIR/ca.key), and for each process
# DIR/server-<i>.{pem,key} and DIR/worker-<w>.{pem,key}, and DIR/tool-0.{pem,key}
# for dl-top, signed by the CA.
# A server's certificate names it ("server-<i>"), which workers check.
# Point the job at DIR with cluster.tls_dir; each job gets its own CA, so a
# process of another job is refused.
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 DIR SERVERS WORKERS" >&2; exit 2; }
dir=$1 servers=$2 workers=$3
command -v openssl >/dev/null || { echo "make-certs: openssl is missing (scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p "$dir"
umask 077
days=30

openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key"
openssl req -x509 -new -key "$dir/ca.key" -sha256 -days "$days" -subj "/CN=shoal job CA" \
  -out "$dir/ca.pem" 2>/dev/null

issue() {  # issue NAME
  local name=$1
  openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$name.key"
  openssl req -new -key "$dir/$name.key" -subj "/CN=$name" -out "$dir/$name.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:%s\n' "$name" >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -sha256 -days "$days" -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
}
for ((i = 0; i < servers; i++)); do issue "server-$i"; done
for ((w = 0; w < workers; w++)); do issue "worker-$w"; done
issue tool-0  # dl-top's, to read the servers' stats
rm -f "$dir/ca.srl"
echo "make-certs: CA, $servers server, $workers worker and one tool certificate in $dir" >&2
