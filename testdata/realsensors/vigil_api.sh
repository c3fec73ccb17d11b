#!/bin/bash
# vigil_api.sh [CASE...]: posts every log of the corpus to a running
# Vigil, as a user would (vigil serve on a fresh --data-dir, a token per
# case and file so each is its own org, POST /v1/artifacts with the file's
# source), then prints each org's observations (GET /v1/observations) and
# incidents (GET /v1/incidents). TestRealSensors does the same in-process;
# this shows the API gives the same numbers. Needs go, curl and jq;
# enrichment off (the lab has no network).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$RS_DIR/../.." && pwd)
ADDR=127.0.0.1:${VIGIL_PORT:-18480}
OUT=$RS_WORK/vigil-api
data=$(mktemp -d)
mkdir -p "$OUT"
(cd "$ROOT" && go build -o "$RS_WORK/vigil" ./cmd/vigil)
"$RS_WORK/vigil" serve --data-dir "$data" --addr "$ADDR" --no-enrichment > "$OUT/serve.log" 2>&1 &
vigil=$!
trap 'kill $vigil 2>/dev/null; wait $vigil 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://$ADDR/readyz" > /dev/null && break; sleep 0.2; done

cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(cd "$RS_CASES" && ls)
for c in "${cases[@]}"; do
	dir=$RS_CASES/$c
	for f in $(jq -r '.logs | keys[]' "$dir/truth.json"); do
		src=$(jq -r --arg f "$f" '.logs[$f]' "$dir/truth.json")
		org=$(echo "$c-$f" | tr -c 'a-z0-9\n' '-')
		tok=$("$RS_WORK/vigil" token --data-dir "$data" --org "$org" --permission admin)
		n=$(grep -c . "$dir/$f")
		jq -R -s --arg src "$src" '{artifacts: (split("\n") | map(select(length > 0)) | map({source: $src, raw: .}))}' "$dir/$f" \
			| curl -sf -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' --data-binary @- \
				"http://$ADDR/v1/artifacts" | jq -e --argjson n "$n" '.data.accepted == $n' > /dev/null
		# Processed when every artifact is parsed and the observations stop changing.
		prev=
		for _ in $(seq 150); do
			sleep 0.4
			cur=$(curl -sf -H "Authorization: Bearer $tok" "http://$ADDR/v1/observations?limit=1000" | jq -c '[.data.observations[] | .description]')
			parsed=$(curl -sf -H "Authorization: Bearer $tok" "http://$ADDR/v1/artifacts?limit=1000" | jq '[.data.artifacts[] | select(.event != null)] | length')
			[ "$parsed" -ge "$n" ] && [ "$cur" = "$prev" ] && break
			prev=$cur
		done
		incidents=$(curl -sf -H "Authorization: Bearer $tok" "http://$ADDR/v1/incidents?limit=1000" | jq -c '[.data.incidents[] | {title, severity, artifact_count, merged_into}]')
		jq -n --arg case "$c" --arg file "$f" --argjson obs "$cur" --argjson inc "$incidents" \
			'{case: $case, file: $file, observations: $obs, incidents: $inc}' | tee "$OUT/$org.json" | jq -c .
	done
done
