// Command calculator is a stdio MCP server (official go-sdk) serving the
// tool of 78/mcp-calculator's calculator.py: "calculator", parameter
// "python_expression", answering {"success":true,"result":…}. It evaluates
// arithmetic only (numbers, + - * / // % **, parentheses), never code:
// the services end-to-end test runs it behind mcp_pipe.py, the way that
// project's README starts servers that are not Python scripts.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type input struct {
	PythonExpression string `json:"python_expression" jsonschema:"an arithmetic expression, e.g. (1+2)*3"`
}

type output struct {
	Success bool    `json:"success"`
	Result  float64 `json:"result"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "Calculator", Version: "1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "calculator",
		Description: "For mathamatical calculation, always use this tool to calculate the result of a python expression."},
		func(_ context.Context, _ *mcp.CallToolRequest, in input) (*mcp.CallToolResult, output, error) {
			v, err := eval(in.PythonExpression)
			if err != nil {
				return nil, output{}, err
			}
			fmt.Fprintf(os.Stderr, "Calculating formula: %s, result: %g\n", in.PythonExpression, v)
			return nil, output{Success: true, Result: v}, nil
		})
	if len(os.Args) > 1 && os.Args[1] == "--test-tools" {
		// For the restart test: which process answers, and a way to die.
		mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "this process's id"},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, map[string]int, error) {
				return nil, map[string]int{"pid": os.Getpid()}, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "end this process at once"},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
				fmt.Fprintln(os.Stderr, "exiting as asked")
				os.Exit(3)
				return nil, struct{}{}, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// eval evaluates an arithmetic expression.
func eval(s string) (float64, error) {
	if len(s) > 1000 {
		return 0, errors.New("expression too long")
	}
	p := &parser{s: strings.TrimSpace(s)}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	if p.skip(); p.i < len(p.s) {
		return 0, fmt.Errorf("unexpected %q at %d", p.s[p.i:], p.i)
	}
	return v, nil
}

type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) skip() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *parser) eat(op string) bool {
	p.skip()
	if strings.HasPrefix(p.s[p.i:], op) {
		p.i += len(op)
		return true
	}
	return false
}

func (p *parser) sum() (float64, error) {
	v, err := p.product()
	for err == nil {
		switch {
		case p.eat("+"):
			var w float64
			w, err = p.product()
			v += w
		case p.eat("-"):
			var w float64
			w, err = p.product()
			v -= w
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *parser) product() (float64, error) {
	v, err := p.unary()
	for err == nil {
		var op string
		for _, o := range []string{"//", "*", "/", "%"} {
			if p.eat(o) { // "**" was taken by power
				op = o
				break
			}
		}
		if op == "" {
			return v, nil
		}
		var w float64
		if w, err = p.unary(); err != nil {
			break
		}
		if w == 0 && op != "*" {
			return 0, errors.New("division by zero")
		}
		switch op {
		case "*":
			v *= w
		case "/":
			v /= w
		case "//":
			v = math.Floor(v / w)
		case "%":
			v = v - w*math.Floor(v/w)
		}
	}
	return 0, err
}

func (p *parser) unary() (float64, error) {
	switch {
	case p.eat("-"):
		v, err := p.unary()
		return -v, err
	case p.eat("+"):
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	v, err := p.atom()
	if err != nil || !p.eat("**") {
		return v, err
	}
	w, err := p.unary()
	return math.Pow(v, w), err
}

func (p *parser) atom() (float64, error) {
	if p.depth++; p.depth > 50 {
		return 0, errors.New("too deeply nested")
	}
	defer func() { p.depth-- }()
	if p.eat("(") {
		v, err := p.sum()
		if err == nil && !p.eat(")") {
			err = errors.New("missing )")
		}
		return v, err
	}
	p.skip()
	j := p.i
	for j < len(p.s) && (p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '.') {
		j++
	}
	if j == p.i {
		return 0, fmt.Errorf("expected a number at %d", p.i)
	}
	v, err := strconv.ParseFloat(p.s[p.i:j], 64)
	p.i = j
	return v, err
}
