// Command go reads the validation benchmark's corpus (bench/corpus.ts: one JSON object per
// line, {"kind", "type", "text"}) and measures, per message, what a Go peer of the protocol
// does with a frame: parse it (jsonrpc.Parse), validate its payload strictly with the
// generated validators, and decode the payload into its generated Go type. It prints one JSON
// object: the median nanoseconds per message of each stage over the rounds, timed on the
// process's CPU clock (as the TypeScript side is: on a shared machine the wall clock would
// also count the time other processes hold the cores).
//
//	go run ./bench/go CORPUS-FILE [ROUNDS]
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"syscall"

	"turnspec.dev/agp"
	"turnspec.dev/agp/jsonrpc"
)

type message struct {
	Kind string `json:"kind"`
	Type string `json:"type"`
	Text string `json:"text"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go CORPUS-FILE [ROUNDS]")
		os.Exit(2)
	}
	rounds := 15
	if len(os.Args) > 2 {
		rounds, _ = strconv.Atoi(os.Args[2])
	}
	file, err := os.Open(os.Args[1])
	if err != nil {
		fail(err)
	}
	var corpus []message
	var frames [][]byte
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var m message
		if err := json.Unmarshal(scanner.Bytes(), &m); err != nil {
			fail(err)
		}
		corpus = append(corpus, m)
		frames = append(frames, []byte(m.Text))
	}
	payload := func(v *jsonrpc.Value, kind string) jsonrpc.Value {
		if kind == "response" {
			return v.Get("result")
		}
		return v.Get("params")
	}
	// Every message must be valid and decode: the benchmark measures the success path.
	for i, m := range corpus {
		v, err := jsonrpc.Parse(frames[i])
		if err != nil {
			fail(fmt.Errorf("message %d: %v", i, err))
		}
		p := payload(&v, m.Kind)
		if err := agp.ValidateType(m.Type, &p, jsonrpc.Strict); err != nil {
			fail(fmt.Errorf("message %d (%s): %v", i, m.Type, err))
		}
		if _, err := agp.ReadType(m.Type, &p); err != nil {
			fail(fmt.Errorf("message %d (%s): %v", i, m.Type, err))
		}
	}
	stages := map[string]func(){
		"parse": func() {
			for i := range corpus {
				_, _ = jsonrpc.Parse(frames[i])
			}
		},
		"parse+validate": func() {
			for i, m := range corpus {
				v, _ := jsonrpc.Parse(frames[i])
				p := payload(&v, m.Kind)
				_ = agp.ValidateType(m.Type, &p, jsonrpc.Strict)
			}
		},
		"parse+validate+decode": func() {
			for i, m := range corpus {
				v, _ := jsonrpc.Parse(frames[i])
				p := payload(&v, m.Kind)
				_ = agp.ValidateType(m.Type, &p, jsonrpc.Strict)
				_, _ = agp.ReadType(m.Type, &p)
			}
		},
	}
	names := []string{"parse", "parse+validate", "parse+validate+decode"}
	samples := map[string][]float64{}
	for _, name := range names {
		stages[name]() // warm up
	}
	for r := 0; r < rounds; r++ {
		for _, name := range names {
			runtime.GC()
			start := cpuTime()
			stages[name]()
			samples[name] = append(samples[name], float64(cpuTime()-start)/float64(len(corpus)))
		}
	}
	out := map[string]any{"messages": len(corpus), "rounds": rounds}
	for _, name := range names {
		xs := samples[name]
		sort.Float64s(xs)
		out[name] = xs[len(xs)/2]
	}
	text, _ := json.Marshal(out)
	fmt.Println(string(text))
}

// cpuTime is the CPU time this process has used, user and system, in nanoseconds.
func cpuTime() int64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		fail(err)
	}
	return usage.Utime.Nano() + usage.Stime.Nano()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/go:", err)
	os.Exit(1)
}
