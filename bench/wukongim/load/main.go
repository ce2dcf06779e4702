// qimbench: the workload of bench/gateway part a, against WuKongIM (issue 27's side-by-side run).
// One group channel of --members subscribers, all offline but the sender; the sender keeps
// --inflight messages in flight over WuKongIM's own TCP client (pkg/client of its repository) and
// times each SENDACK. Afterwards it reads how many messages the channel actually stored
// (GET /channel/max_message_seq: seqs are dense) — WuKongIM acknowledges before it stores.
//
// It is built inside a WuKongIM source tree (bench/wukongim/run.sh copies it to cmd/qimbench),
// because it uses that tree's client package; it is not part of the project's build or tests.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/WuKongIM/WuKongIM/pkg/client"
	wkproto "github.com/WuKongIM/WuKongIMGoProto"
)

func main() {
	tcp := flag.String("tcp", "127.0.0.1:15100", "WuKongIM's TCP listener")
	api := flag.String("http", "http://127.0.0.1:15001", "WuKongIM's HTTP API")
	sends := flag.Int("sends", 4000, "messages to send")
	inflight := flag.Int("inflight", 64, "messages in flight at most")
	members := flag.Int("members", 20, "subscribers of the group channel (the sender is one)")
	payloadLen := flag.Int("payload", 64, "payload bytes")
	encrypt := flag.Bool("encrypt", true, "WuKongIM's per-message AES (its default)")
	settle := flag.Duration("settle", 15*time.Second, "how long to wait for the stored count to reach the acked count")
	flag.Parse()

	run := fmt.Sprintf("qb%d", time.Now().UnixNano())
	channelID := run + "g"
	uids := make([]string, *members)
	for i := range uids {
		uids[i] = fmt.Sprintf("%su%d", run, i)
	}
	body, _ := json.Marshal(map[string]any{"channel_id": channelID, "channel_type": wkproto.ChannelTypeGroup, "subscribers": uids, "reset": 1})
	// /health answers before the node's slots have a leader on a slow machine: the first creates
	// are refused with 400 for a few seconds, so retry for up to 30 s
	for attempt := 0; ; attempt++ {
		resp, err := http.Post(*api+"/channel", "application/json", bytes.NewReader(body))
		if err != nil {
			fail("create channel: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if attempt >= 150 {
			fail("create channel: %d %s", resp.StatusCode, b)
		}
		time.Sleep(200 * time.Millisecond)
	}

	cli := client.New("tcp://"+*tcp, client.WithUID(uids[0]), client.WithToken("bench"))
	if err := cli.Connect(); err != nil {
		fail("connect: %v", err)
	}
	defer cli.Close()

	n := *sends
	sentAt := make([]int64, n)
	latency := make([]int64, n)
	var acked, refused atomic.Int64
	sem := make(chan struct{}, *inflight)
	done := make(chan struct{})
	cli.SetOnSendack(func(p *wkproto.SendackPacket) {
		i := int(p.ClientSeq) - 1
		if i < 0 || i >= n {
			return
		}
		atomic.StoreInt64(&latency[i], time.Now().UnixNano()-atomic.LoadInt64(&sentAt[i]))
		if p.ReasonCode != wkproto.ReasonSuccess {
			refused.Add(1)
		}
		<-sem
		if acked.Add(1) == int64(n) {
			close(done)
		}
	})
	ch := &client.Channel{ChannelID: channelID, ChannelType: wkproto.ChannelTypeGroup}
	payload := make([]byte, *payloadLen)
	opts := []client.SendOption{}
	if !*encrypt {
		opts = append(opts, client.SendOptionWithNoEncrypt(true))
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		atomic.StoreInt64(&sentAt[i], time.Now().UnixNano())
		if err := cli.SendMessage(ch, payload, opts...); err != nil {
			fail("send %d: %v", i, err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		fail("only %d of %d acked after 5 minutes", acked.Load(), n)
	}
	elapsed := time.Since(start)
	storedAtAck := maxSeq(*api, channelID)
	stored := storedAtAck
	deadline := time.Now().Add(*settle)
	for stored < int64(n) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		stored = maxSeq(*api, channelID)
	}
	sort.Slice(latency, func(a, b int) bool { return latency[a] < latency[b] })
	ms := func(q float64) float64 { return float64(latency[int(q*float64(n-1))]) / 1e6 }
	out, _ := json.Marshal(map[string]any{
		"sends": n, "inflight": *inflight, "members": *members, "encrypt": *encrypt,
		"sendsPerSec": float64(n) / elapsed.Seconds(), "ackP50Ms": ms(0.5), "ackP99Ms": ms(0.99),
		"refused": refused.Load(), "storedWhenLastAcked": storedAtAck, "storedAfterSettle": stored,
	})
	fmt.Println(string(out))
}

func maxSeq(api, channelID string) int64 {
	resp, err := http.Get(fmt.Sprintf("%s/channel/max_message_seq?channel_id=%s&channel_type=%d", api, channelID, wkproto.ChannelTypeGroup))
	if err != nil {
		fail("max_message_seq: %v", err)
	}
	defer resp.Body.Close()
	var r struct {
		MessageSeq int64 `json:"message_seq"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		fail("max_message_seq: %v", err)
	}
	return r.MessageSeq
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "qimbench: "+format+"\n", args...)
	os.Exit(1)
}
