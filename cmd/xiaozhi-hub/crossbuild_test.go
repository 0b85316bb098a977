package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The release archives scripts/release.sh makes, and what each binary must be.
var crossTargets = []struct {
	archive, goos, goarch, goarm string
	format                       func(r io.ReaderAt) error
}{
	{"xiaozhi-hub_linux_amd64.tar.gz", "linux", "amd64", "", elfOf(elf.ELFCLASS64, elf.EM_X86_64)},
	{"xiaozhi-hub_linux_arm64.tar.gz", "linux", "arm64", "", elfOf(elf.ELFCLASS64, elf.EM_AARCH64)},
	{"xiaozhi-hub_linux_armv7.tar.gz", "linux", "arm", "7", elfOf(elf.ELFCLASS32, elf.EM_ARM)},
	{"xiaozhi-hub_darwin_arm64.tar.gz", "darwin", "arm64", "", machoOf(macho.CpuArm64)},
	{"xiaozhi-hub_darwin_amd64.tar.gz", "darwin", "amd64", "", machoOf(macho.CpuAmd64)},
	{"xiaozhi-hub_windows_amd64.zip", "windows", "amd64", "", peAmd64Console},
}

// TestCrossBuilds checks the release in $XZ_CROSSBUILD_DIR (made by
// `scripts/release.sh -o DIR`; .ci/run does both): every archive is listed in
// SHA256SUMS with its hash, holds the unit and settings file of deploy/ and
// a static binary of the right format, OS, architecture (GOARM=7 for the
// Raspberry Pi) and version. Skipped when the variable is unset.
func TestCrossBuilds(t *testing.T) {
	dir := os.Getenv("XZ_CROSSBUILD_DIR")
	if dir == "" {
		t.Skip("XZ_CROSSBUILD_DIR is not set: run scripts/release.sh -o DIR first, then set it to DIR (.ci/run does)")
	}
	sums := readSums(t, filepath.Join(dir, "SHA256SUMS"))
	if len(sums) != len(crossTargets) {
		t.Errorf("SHA256SUMS lists %d files, want %d", len(sums), len(crossTargets))
	}
	version := os.Getenv("XZ_CROSSBUILD_VERSION")
	for _, c := range crossTargets {
		t.Run(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(c.archive, "xiaozhi-hub_"), ".zip"), ".tar.gz"), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, c.archive))
			if err != nil {
				t.Fatal(err)
			}
			if h := sha256.Sum256(data); sums[c.archive] != hex.EncodeToString(h[:]) {
				t.Errorf("%s: SHA256SUMS says %q, the file is %x", c.archive, sums[c.archive], h)
			}
			files := unpack(t, filepath.Join(dir, c.archive), data)
			for _, f := range []string{"xiaozhi-hub.service", "hub.yaml"} {
				if files[f] != readRepoFile(t, "deploy/"+f) {
					t.Errorf("%s: %s differs from deploy/%s", c.archive, f, f)
				}
			}
			exe := "xiaozhi-hub"
			if c.goos == "windows" {
				exe += ".exe"
			}
			bin, ok := files[exe]
			if !ok {
				t.Fatalf("%s has no %s", c.archive, exe)
			}
			r := strings.NewReader(bin)
			if err := c.format(r); err != nil {
				t.Errorf("%s: %v", c.archive, err)
			}
			checkBuildSettings(t, c.archive, r, map[string]string{
				"GOOS": c.goos, "GOARCH": c.goarch, "GOARM": c.goarm, "CGO_ENABLED": "0", "-trimpath": "true",
			})
			if c.goos == runtime.GOOS && c.goarch == runtime.GOARCH && version == "" {
				version = runVersion(t, bin)
			}
			if version != "" && !strings.Contains(bin, version) {
				t.Errorf("%s: the binary does not contain its version %q", c.archive, version)
			}
		})
	}
}

// readSums parses sha256sum's output: "<hex>  <name>" per line.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([0-9a-f]{64})  (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		sums[m[2]] = m[1]
	}
	return sums
}

// unpack returns the regular files of a .tar.gz or .zip by base name; they
// must all be in one directory named after the archive.
func unpack(t *testing.T, path string, data []byte) map[string]string {
	name := filepath.Base(path)
	t.Helper()
	top := strings.TrimSuffix(strings.TrimSuffix(name, ".zip"), ".tar.gz") + "/"
	files := map[string]string{}
	add := func(path string, r io.Reader) {
		if !strings.HasPrefix(path, top) || strings.Contains(path[len(top):], "/") {
			t.Errorf("%s: %s is not in %s", name, path, top)
		}
		b, err := io.ReadAll(io.LimitReader(r, 200<<20))
		if err != nil {
			t.Fatalf("%s: %s: %v", name, path, err)
		}
		files[filepath.Base(path)] = string(b)
	}
	if strings.HasSuffix(name, ".zip") {
		z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range z.File {
			if f.Mode().IsRegular() {
				add(f.Name, bytes.NewReader(inflate(t, path, f)))
			}
		}
		return files
	}
	// gzip(1), not compress/gzip: under -race, Go's inflate of ~150 MB takes
	// a minute and the tool a second.
	cmd := exec.Command("gzip", "-dc")
	cmd.Stdin = bytes.NewReader(data)
	var tarData bytes.Buffer
	cmd.Stdout = &tarData
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: gzip -dc: %v", name, err)
	}
	tr := tar.NewReader(&tarData)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if h.Uid != 0 || h.Gid != 0 || h.Mode&0o022 != 0 {
				t.Errorf("%s: %s is owned by %d:%d, mode %o", name, h.Name, h.Uid, h.Gid, h.Mode)
			}
			if filepath.Base(h.Name) == "xiaozhi-hub" && h.Mode&0o111 != 0o111 {
				t.Errorf("%s: the binary is not executable (mode %o)", name, h.Mode)
			}
			add(h.Name, tr)
		}
	}
}

// inflate returns a zip entry's content, with unzip(1) when there is one
// (see the note on gzip above) and archive/zip otherwise.
func inflate(t *testing.T, zipPath string, f *zip.File) []byte {
	t.Helper()
	if _, err := exec.LookPath("unzip"); err == nil && !strings.ContainsAny(f.Name, "*?[]\\") {
		out, err := exec.Command("unzip", "-p", zipPath, f.Name).Output()
		if err != nil {
			t.Fatalf("%s: unzip -p %s: %v", zipPath, f.Name, err)
		}
		return out
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return b
}

// elfOf wants a static executable (no interpreter) of this class and machine.
func elfOf(class elf.Class, machine elf.Machine) func(io.ReaderAt) error {
	return func(r io.ReaderAt) error {
		f, err := elf.NewFile(r)
		if err != nil {
			return err
		}
		if f.Class != class || f.Machine != machine || f.Type != elf.ET_EXEC {
			return fmt.Errorf("ELF %v %v %v, want %v %v ET_EXEC", f.Class, f.Machine, f.Type, class, machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return fmt.Errorf("dynamically linked (has an interpreter)")
			}
		}
		return nil
	}
}

func machoOf(cpu macho.Cpu) func(io.ReaderAt) error {
	return func(r io.ReaderAt) error {
		f, err := macho.NewFile(r)
		if err != nil {
			return err
		}
		if f.Cpu != cpu || f.Type != macho.TypeExec {
			return fmt.Errorf("Mach-O %v type %v, want %v executable", f.Cpu, f.Type, cpu)
		}
		return nil
	}
}

func peAmd64Console(r io.ReaderAt) error {
	f, err := pe.NewFile(r)
	if err != nil {
		return err
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 || !ok || oh.Subsystem != pe.IMAGE_SUBSYSTEM_WINDOWS_CUI {
		return fmt.Errorf("PE machine %#x, optional header %T, want an amd64 console program", f.Machine, f.OptionalHeader)
	}
	return nil
}

// checkBuildSettings compares the build settings Go recorded in the binary.
func checkBuildSettings(t *testing.T, name string, r io.ReaderAt, want map[string]string) {
	t.Helper()
	info, err := buildinfo.Read(r)
	if err != nil {
		t.Errorf("%s: build info: %v", name, err)
		return
	}
	if info.Path != "github.com/xiaozhi-hub/hub/cmd/xiaozhi-hub" {
		t.Errorf("%s: built from %s", name, info.Path)
	}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: build setting %s=%q, want %q", name, k, got[k], v)
		}
	}
}

// runVersion runs `xiaozhi-hub version` of a binary for this machine and
// returns the version it prints.
func runVersion(t *testing.T, bin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "xiaozhi-hub")
	if err := os.WriteFile(path, []byte(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("xiaozhi-hub version: %v", err)
	}
	m := regexp.MustCompile(`^xiaozhi-hub (\S+) `).FindStringSubmatch(string(out))
	if m == nil || m[1] == "dev" {
		t.Fatalf("xiaozhi-hub version printed %q: the release has no version", out)
	}
	return m[1]
}
