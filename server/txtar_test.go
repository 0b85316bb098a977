package server_test

import (
	"bytes"
	"strings"
)

// txtar is the txtar archive format (golang.org/x/tools/txtar): a comment,
// then files, each introduced by a line "-- name --". Parsing it takes
// these few lines, so the tests do without the x/tools module.
type txtar struct {
	comment []byte
	files   []txtarFile
}

type txtarFile struct {
	name string
	data []byte
}

func parseTxtar(data []byte) *txtar {
	ar := &txtar{}
	cur := &ar.comment
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		s := strings.TrimRight(string(line), "\r\n")
		if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
			ar.files = append(ar.files, txtarFile{name: strings.TrimSpace(s[3 : len(s)-3])})
			cur = &ar.files[len(ar.files)-1].data
			continue
		}
		*cur = append(*cur, line...)
	}
	return ar
}

func (ar *txtar) section(name string) []byte {
	for _, f := range ar.files {
		if f.name == name {
			return f.data
		}
	}
	return nil
}

func (ar *txtar) set(name string, data []byte) {
	for i := range ar.files {
		if ar.files[i].name == name {
			ar.files[i].data = data
			return
		}
	}
	ar.files = append(ar.files, txtarFile{name: name, data: data})
}

func (ar *txtar) format() []byte {
	var b bytes.Buffer
	b.Write(fixNL(ar.comment))
	for _, f := range ar.files {
		b.WriteString("-- " + f.name + " --\n")
		b.Write(fixNL(f.data))
	}
	return b.Bytes()
}

func fixNL(data []byte) []byte {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return data
	}
	return append(data, '\n')
}
