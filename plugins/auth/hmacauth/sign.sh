#!/bin/sh
# Signs one request for hmac-auth and sends it with curl: a reference client in a few lines of
# shell (see README.md, "Signing string"). Needs openssl and curl.
#   KEY_ID=alice-1 SECRET=alice-secret-please-rotate-me ./sign.sh GET 'http://127.0.0.1:10000/orders?id=42' [curl args...]
# With PRINT=1 it prints the curl command instead of running it, so the same signed request can
# be sent twice (the second time is a replay).
set -eu
method=$1 url=$2
shift 2
rest=${url#*://}
case $rest in */*) path=/${rest#*/} ;; *) path=/ ;; esac
date=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
nonce=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
target="$(printf %s "$method" | tr 'A-Z' 'a-z') $path"
sig=$(printf '@request-target: %s\ndate: %s\nx-nonce: %s' "$target" "$date" "$nonce" |
  openssl dgst -sha256 -hmac "$SECRET" -binary | base64)
auth="Signature keyId=\"$KEY_ID\",algorithm=\"hmac-sha256\",headers=\"@request-target date x-nonce\",signature=\"$sig\""
if [ "${PRINT:-}" = 1 ]; then
  printf "curl -sS -i -X %s '%s' -H 'date: %s' -H 'x-nonce: %s' -H '%s'\n" "$method" "$url" "$date" "$nonce" "authorization: $auth"
  exit 0
fi
exec curl -sS -i -X "$method" "$url" -H "date: $date" -H "x-nonce: $nonce" -H "authorization: $auth" "$@"
