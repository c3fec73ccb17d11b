package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"

	"github.com/vigil-soc/vigil/internal/client"
)

// The ways --via sends the lines: POST /v1/artifacts, the Elasticsearch
// bulk endpoint, or the syslog TCP listeners (octet counting).
const (
	ViaHTTP    = "http"
	ViaElastic = "elastic-bulk"
	ViaSyslog  = "syslog-tcp"
)

// sourceFrames are the octet-counted syslog frames of one batch's lines
// of one source, for the listener of that source.
type sourceFrames struct {
	source string
	data   []byte
	lines  int
}

// encodeBulk encodes the lines as encodeBodies does, each batch a bulk
// request: an index action naming the source as the index (which the
// endpoint takes as the source), then the line as the document's message,
// with @timestamp the send time under --times live.
func (b *bench) encodeBulk(start int) ([]byte, error) {
	var buf bytes.Buffer
	for k := 0; k < b.f.Batch; k++ {
		l := b.lines[(start+k)%len(b.lines)]
		action, err := json.Marshal(map[string]map[string]string{"create": {"_index": l.Source}})
		if err != nil {
			return nil, err
		}
		doc := map[string]string{"message": l.Raw}
		if ts := b.stampPlaceholder(); ts != "" {
			doc["@timestamp"] = ts
		}
		d, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encode a bulk request: %w", err)
		}
		buf.Write(action)
		buf.WriteByte('\n')
		buf.Write(d)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// encodeFrames encodes a batch's lines as octet-counted syslog frames,
// one run of frames per source (each source has its listener), and
// returns them with their total size.
func (b *bench) encodeFrames(start int) ([]sourceFrames, int) {
	by := map[string]*sourceFrames{}
	for k := 0; k < b.f.Batch; k++ {
		l := b.lines[(start+k)%len(b.lines)]
		f := by[l.Source]
		if f == nil {
			f = &sourceFrames{source: l.Source}
			by[l.Source] = f
		}
		f.data = strconv.AppendInt(f.data, int64(len(l.Raw)), 10)
		f.data = append(f.data, ' ')
		f.data = append(f.data, l.Raw...)
		f.lines++
	}
	out := make([]sourceFrames, 0, len(by))
	size := 0
	for _, f := range by {
		out = append(out, *f)
		size += len(f.data)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].source < out[j].source })
	return out, size
}

// syslogListenArgs are the embedded server's listeners of --via
// syslog-tcp: one TCP listener per source on a free port, whose source=
// is that source, so that the lines are parsed as the same sources as
// over HTTP. It records their addresses.
func (b *bench) syslogListenArgs() ([]string, error) {
	var args []string
	b.syslogAddrs = map[string]string{}
	srcs := make([]string, 0, len(b.rep.Settings.LinesBySource))
	for src := range b.rep.Settings.LinesBySource {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr := ln.Addr().String()
		ln.Close()
		b.syslogAddrs[src] = addr
		args = append(args, "--syslog-listen", fmt.Sprintf("tcp://%s?org=%s&name=%s&source=%s&max-message=1MiB", addr, b.f.Org, src, src))
	}
	return args, nil
}

// poster returns what one client sends batch i with, and what ends its
// connections. Over syslog a batch is taken once written (TCP has no
// acknowledgement; a full queue stops the listener reading, so the write
// blocks): its result is a 200 with every line accepted.
func (b *bench) poster() (post func(ctx context.Context, i, round int) (client.PostResult, error), done func()) {
	switch b.f.Via {
	case ViaElastic:
		return func(ctx context.Context, i, round int) (client.PostResult, error) {
			return b.api.PostElasticBulk(ctx, b.body(i, round))
		}, func() {}
	case ViaSyslog:
		conns := map[string]net.Conn{}
		return func(ctx context.Context, i, _ int) (client.PostResult, error) {
				n := 0
				for _, f := range b.frames[i] {
					c := conns[f.source]
					if c == nil {
						var err error
						var d net.Dialer
						if c, err = d.DialContext(ctx, "tcp", b.syslogAddrs[f.source]); err != nil {
							return client.PostResult{}, err
						}
						conns[f.source] = c
					}
					if _, err := c.Write(f.data); err != nil {
						c.Close()
						delete(conns, f.source)
						return client.PostResult{Accepted: n}, err
					}
					n += f.lines
				}
				return client.PostResult{Status: http.StatusOK, Accepted: n}, nil
			}, func() {
				for _, c := range conns {
					c.Close()
				}
			}
	default:
		return func(ctx context.Context, i, round int) (client.PostResult, error) {
			return b.api.PostArtifactsJSON(ctx, b.body(i, round))
		}, func() {}
	}
}
