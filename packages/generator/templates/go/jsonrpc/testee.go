package jsonrpc

import (
	"bufio"
	"errors"
	"io"
	"sort"
)

// TesteeTypes is what a testee needs of a generated package beyond its Protocol: reading a
// value into the package's Go type of a named type, and writing it back.
type TesteeTypes struct {
	Read  func(typeName string, v *Value) (any, error)
	Write func(typeName string, x any) (Value, error)
}

// ServeTestee answers the language contract's harness (docs/languages.md, "The testee
// protocol"): one JSON command per line from in, one JSON answer per line to out, in order,
// each echoing the command's id. The verdicts are the generated validators', round trips go
// through the generated Go types, and what is written is the canonical JSON form.
func ServeTestee(p *Protocol, types TesteeTypes, in io.Reader, out io.Writer) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 256<<20)
	w := bufio.NewWriter(out)
	defer w.Flush()
	for scanner.Scan() {
		line := scanner.Bytes()
		if len(trimSpace(line)) == 0 {
			continue
		}
		var answer []Member
		command, err := Parse(line)
		if err != nil || command.kind != Object {
			problem := "a command is a JSON object"
			if err != nil {
				problem = err.Error()
			}
			answer = []Member{{"id", NullValue()}, {"bad_command", StringValue(problem)}}
		} else {
			id := command.Get("id")
			if id.IsAbsent() {
				id = NullValue()
			}
			answer = append([]Member{{"id", id}}, answerTestee(p, types, &command)...)
		}
		text, err := Canonical(ObjectValue(answer...))
		if err != nil {
			return err
		}
		if _, err := w.Write(append(text, '\n')); err != nil {
			return err
		}
		// Each answer goes out as it is made: the harness waits for it.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

type testeeParseError struct{ problem string }

func (e *testeeParseError) Error() string { return e.problem }

// parseText parses the JSON text a command carries in one of its members.
func parseText(v Value) (Value, error) {
	if v.kind != String {
		return Value{}, &testeeParseError{"json must be a string holding JSON text"}
	}
	parsed, err := Parse([]byte(v.text))
	if err != nil {
		return Value{}, &testeeParseError{err.Error()}
	}
	return parsed, nil
}

func modeOf(command *Value) Mode {
	if m := command.Get("mode"); m.kind == String && m.text == "tolerant" {
		return Tolerant
	}
	return Strict
}

// sortedPointers are the issues' pointers, each once, in UTF-16 order.
func sortedPointers(err error) Value {
	seen := map[string]bool{}
	var pointers []string
	for _, issue := range issuesOf(err) {
		if !seen[issue.Pointer] {
			seen[issue.Pointer] = true
			pointers = append(pointers, issue.Pointer)
		}
	}
	sort.Slice(pointers, func(i, j int) bool { return CompareKeys(pointers[i], pointers[j]) < 0 })
	items := make([]Value, len(pointers))
	for i, p := range pointers {
		items[i] = StringValue(p)
	}
	return ArrayValue(items...)
}

func answerTestee(p *Protocol, types TesteeTypes, command *Value) []Member {
	answer, err := testeeAnswer(p, types, command)
	var parse *testeeParseError
	if errors.As(err, &parse) {
		return []Member{{"parse_error", StringValue(parse.problem)}}
	}
	if err != nil {
		return []Member{{"error", StringValue(err.Error())}}
	}
	return answer
}

func testeeAnswer(p *Protocol, types TesteeTypes, command *Value) ([]Member, error) {
	op := command.Get("op").Str()
	typeName := command.Get("type").Str()
	switch op {
	case "hello":
		return []Member{{"language", StringValue("go")}, {"protocol", StringValue(p.Title)}}, nil
	case "validate":
		v, err := parseText(command.Get("json"))
		if err != nil {
			return nil, err
		}
		if err := p.Validate(typeName, &v, modeOf(command)); err != nil {
			return []Member{{"valid", BoolValue(false)}, {"pointers", sortedPointers(err)}}, nil
		}
		return []Member{{"valid", BoolValue(true)}, {"pointers", ArrayValue()}}, nil
	case "roundtrip":
		v, err := parseText(command.Get("json"))
		if err != nil {
			return nil, err
		}
		if err := p.Validate(typeName, &v, modeOf(command)); err != nil {
			return []Member{{"ok", BoolValue(false)}, {"pointers", sortedPointers(err)}}, nil
		}
		// Through the Go type and back: what the type keeps is what is written.
		x, err := types.Read(typeName, &v)
		if err != nil {
			return nil, err
		}
		back, err := types.Write(typeName, x)
		if err != nil {
			return nil, err
		}
		text, err := Canonical(back)
		if err != nil {
			return nil, err
		}
		return []Member{{"ok", BoolValue(true)}, {"json", StringValue(string(text))}}, nil
	case "encode":
		v, err := parseText(command.Get("json"))
		if err != nil {
			return nil, err
		}
		text, err := Canonical(v)
		if err != nil {
			// 1e400 parses to infinity, which no JSON text denotes.
			return []Member{{"unencodable", StringValue(err.Error())}}, nil
		}
		return []Member{{"json", StringValue(string(text))}}, nil
	case "messages":
		checker := NewMessageChecker(p, modeOf(command), false)
		type finding struct {
			frame   int
			pointer string
		}
		var findings []finding
		seen := map[finding]bool{}
		for i, frame := range command.Get("frames").Items() {
			v, err := parseText(frame)
			if err != nil {
				return nil, err
			}
			for _, f := range checker.Check(&v, i) {
				key := finding{i, f.Pointer()}
				if !seen[key] {
					seen[key] = true
					findings = append(findings, key)
				}
			}
		}
		sort.SliceStable(findings, func(i, j int) bool {
			if findings[i].frame != findings[j].frame {
				return findings[i].frame < findings[j].frame
			}
			return CompareKeys(findings[i].pointer, findings[j].pointer) < 0
		})
		items := make([]Value, len(findings))
		for i, f := range findings {
			items[i] = ObjectValue(Member{"frame", IntValue(int64(f.frame))}, Member{"pointer", StringValue(f.pointer)})
		}
		return []Member{{"findings", ArrayValue(items...)}}, nil
	case "ordering":
		checker := NewOrderingChecker(p.Ordering)
		var items []Value
		for _, frame := range command.Get("frames").Items() {
			v, err := parseText(frame.Get("json"))
			if err != nil {
				return nil, err
			}
			from := ClientToServer
			if frame.Get("from").Str() == "server_to_client" {
				from = ServerToClient
			}
			for _, violation := range checker.Accept(v, from) {
				items = append(items, ObjectValue(Member{"frame", IntValue(int64(violation.FrameIndex))}, Member{"rule", StringValue(violation.Rule)}))
			}
		}
		for _, violation := range checker.End(false) {
			items = append(items, ObjectValue(Member{"frame", NullValue()}, Member{"rule", StringValue(violation.Rule)}))
		}
		return []Member{{"violations", ArrayValue(items...)}}, nil
	}
	return []Member{{"unsupported", StringValue(`no command "` + op + `"`)}}, nil
}
