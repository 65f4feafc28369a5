// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// mainPackage is the package every packaged binary must be built from.
const mainPackage = "github.com/otelcol-gym/otelcol-gym/cmd/otelcol-gym"

// binaryInfo is what checkBinary learned about a binary.
type binaryInfo struct {
	minMacOS [2]int // darwin only: the oldest macOS it runs on
}

// checkBinary checks that b is an otelcol-gym executable for p that runs with
// nothing else installed: the executable format and architecture of p (ELF
// or Mach-O header), built from mainPackage with CGO_ENABLED=0 and -trimpath
// (its build information), and on Linux no interpreter and no shared
// library, on macOS none but the system's own (Go links libSystem and, for
// certificates, the Security framework on every Mac).
func checkBinary(b []byte, p platform) (binaryInfo, error) {
	info, err := buildinfo.Read(bytes.NewReader(b))
	if err != nil {
		return binaryInfo{}, fmt.Errorf("not a Go binary: %w", err)
	}
	if err := checkBuildInfo(info, p); err != nil {
		return binaryInfo{}, err
	}
	var bi binaryInfo
	switch p.goos {
	case "linux":
		err = checkELF(b, p)
	case "darwin":
		bi.minMacOS, err = checkMachO(b, p)
	}
	return bi, err
}

func checkBuildInfo(info *debug.BuildInfo, p platform) error {
	if info.Path != mainPackage {
		return fmt.Errorf("built from %s, not %s", info.Path, mainPackage)
	}
	want := map[string]string{"GOOS": p.goos, "GOARCH": p.goarch, "CGO_ENABLED": "0", "-trimpath": "true"}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	var errs []error
	for _, k := range []string{"GOOS", "GOARCH", "CGO_ENABLED", "-trimpath"} {
		if got[k] != want[k] {
			errs = append(errs, fmt.Errorf("built with %s=%q, want %q (CGO_ENABLED=0 go build -trimpath, as the Makefile builds it)", k, got[k], want[k]))
		}
	}
	return errors.Join(errs...)
}

func checkELF(b []byte, p platform) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s wants an ELF executable: %w", p, err)
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.goarch]
	if f.Class != elf.ELFCLASS64 || f.Machine != machine {
		return fmt.Errorf("ELF %v %v, want %v %v for %s", f.Class, f.Machine, elf.ELFCLASS64, machine, p)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("ELF type %v is not an executable", f.Type)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("ELF has a dynamic loader (PT_INTERP): not statically linked")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	if len(libs) != 0 {
		return fmt.Errorf("ELF needs shared libraries %v: not statically linked", libs)
	}
	return nil
}

// lcBuildVersion is LC_BUILD_VERSION, which debug/macho does not decode.
const lcBuildVersion macho.LoadCmd = 0x32

func checkMachO(b []byte, p platform) ([2]int, error) {
	var minOS [2]int
	f, err := macho.NewFile(bytes.NewReader(b))
	if err != nil {
		return minOS, fmt.Errorf("%s wants a Mach-O executable: %w", p, err)
	}
	defer f.Close()
	cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.goarch]
	if f.Magic != macho.Magic64 || f.Cpu != cpu || f.Type != macho.TypeExec {
		return minOS, fmt.Errorf("Mach-O %#x %v type %v, want a 64-bit %v executable for %s", f.Magic, f.Cpu, f.Type, cpu, p)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return minOS, err
	}
	for _, lib := range libs {
		if !strings.HasPrefix(lib, "/usr/lib/") && !strings.HasPrefix(lib, "/System/Library/") {
			return minOS, fmt.Errorf("Mach-O needs %s, which is not part of macOS", lib)
		}
	}
	found := false
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) < 16 || macho.LoadCmd(f.ByteOrder.Uint32(raw)) != lcBuildVersion {
			continue
		}
		// struct build_version_command { cmd, cmdsize, platform, minos (xxxx.yy.zz), ... }
		if platformMacOS := uint32(1); f.ByteOrder.Uint32(raw[8:]) != platformMacOS {
			return minOS, fmt.Errorf("Mach-O is built for platform %d, not macOS", f.ByteOrder.Uint32(raw[8:]))
		}
		v := f.ByteOrder.Uint32(raw[12:])
		minOS = [2]int{int(v >> 16), int(v >> 8 & 0xff)}
		found = true
	}
	if !found {
		return minOS, errors.New("Mach-O has no LC_BUILD_VERSION: cannot tell the oldest macOS it runs on")
	}
	return minOS, nil
}
