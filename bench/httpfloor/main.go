// Command httpfloor measures the floor under the decision service's CPU
// per decision+reward pair (docs/performance.md): the CPU that Go's
// net/http server spends on a pair of requests that do no work at all,
// on the loopback interface, with the clients of `dpbandit loadtest`
// (32 keep-alive connections, a small JSON body each way, the next
// request sent when the answer came).
//
//	go run ./bench/httpfloor [-clients 32] [-duration 20s]
//
// It starts itself as the server (a child process, so that its CPU is
// its own: utime + stime from /proc/PID/stat, Linux only), runs the
// clients in this process and prints the server's CPU per request and
// per pair (two requests).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// body is a reward's request body, the size of loadtest's.
var body = []byte(`{"event_id":"e-000000000001","reward":1}`)

// answer is a decision's answer, the size of the service's.
var answer = []byte(`{"event_id":"e-000000000001","arm":3,"probability":0.962,"explored":false}` + "\n")

func main() {
	serve := flag.String("serve", "", "serve on this address (the child process)")
	clients := flag.Int("clients", 32, "concurrent clients")
	dur := flag.Duration("duration", 20*time.Second, "how long the clients run")
	flag.Parse()
	if *serve != "" {
		runServer(*serve)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	child := exec.Command(self, "-serve", addr)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		log.Fatal(err)
	}
	defer child.Process.Kill()
	url := "http://" + addr + "/v1/reward"
	c := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * *clients, MaxIdleConnsPerHost: 2 * *clients}}
	for i := 0; ; i++ { // wait until it answers
		if _, err := post(c, url); err == nil {
			break
		} else if i == 100 {
			log.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	u0, s0 := cpuTicks(child.Process.Pid)
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	var wg sync.WaitGroup
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := post(c, url); err != nil {
					log.Fatal(err)
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	u1, s1 := cpuTicks(child.Process.Pid)
	const hz = 100.0 // USER_HZ on Linux
	req := float64(n.Load())
	user, sys := float64(u1-u0)/hz, float64(s1-s0)/hz
	fmt.Printf("%.0f requests in %v (%.0f/s), %d clients: the server spent %.2f s of CPU (%.2f user, %.2f system): %.1f us per pair (%.1f user, %.1f system)\n",
		req, *dur, req/dur.Seconds(), *clients, user+sys, user, sys, 2*(user+sys)/req*1e6, 2*user/req*1e6, 2*sys/req*1e6)
}

// post sends one request and reads its whole answer.
func post(c *http.Client, url string) (int, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return len(b), err
}

// runServer answers every request with answer after reading its body, as
// a handler that does no work would.
func runServer(addr string) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.Write(answer)
	})
	log.Fatal(http.ListenAndServe(addr, h))
}

// cpuTicks returns the utime and the stime of process pid, in clock ticks.
func cpuTicks(pid int) (user, system int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	u, _ := strconv.ParseInt(f[11], 10, 64)                  // field 14
	k, _ := strconv.ParseInt(f[12], 10, 64)                  // field 15
	return u, k
}
