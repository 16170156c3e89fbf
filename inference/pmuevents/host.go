package pmuevents

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// CPU identifies a processor the way perf's mapfile.csv does.
type CPU struct {
	Arch string // directory under the arch root: "x86", "arm64", "powerpc"
	// ID is perf's cpuid string: "GenuineIntel-6-55-4" (vendor-family-model-stepping,
	// model and stepping in hex) on x86, the MIDR "0x00000000410fd0c0" on arm64, the PVR
	// "0x004e1202" on powerpc.
	ID string
}

// ErrNoMatch is wrapped by FindDir when mapfile.csv has no line for the CPU.
var ErrNoMatch = errors.New("no pmu-events table for this CPU")

// ParseCPUInfo builds the CPU id from /proc/cpuinfo text for arch ("x86", "powerpc");
// arm64 needs the MIDR register instead (see HostCPU).
func ParseCPUInfo(arch string, r io.Reader) (CPU, error) {
	fields := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" && len(fields) > 0 {
			break // first processor only
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := fields[k]; !seen {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return CPU{}, fmt.Errorf("read cpuinfo: %w", err)
	}
	switch arch {
	case "x86":
		vendor := fields["vendor_id"]
		fam, err1 := strconv.Atoi(fields["cpu family"])
		model, err2 := strconv.Atoi(fields["model"])
		step, err3 := strconv.Atoi(fields["stepping"])
		if vendor == "" || err1 != nil || err2 != nil || err3 != nil {
			return CPU{}, errors.New("read cpuinfo: no vendor_id, cpu family, model and stepping")
		}
		return CPU{Arch: arch, ID: fmt.Sprintf("%s-%d-%X-%X", vendor, fam, model, step)}, nil
	case "powerpc":
		// "revision : 2.2 (pvr 004e 1202)"
		rev := fields["revision"]
		i := strings.Index(rev, "pvr ")
		if i < 0 {
			return CPU{}, errors.New("read cpuinfo: no pvr in the revision line")
		}
		hex := strings.TrimSuffix(strings.ReplaceAll(rev[i+4:], " ", ""), ")")
		v, err := strconv.ParseUint(hex, 16, 32)
		if err != nil {
			return CPU{}, fmt.Errorf("read cpuinfo: pvr %q: %w", hex, err)
		}
		return CPU{Arch: arch, ID: fmt.Sprintf("0x%08x", v)}, nil
	}
	return CPU{}, fmt.Errorf("read cpuinfo: architecture %q has no cpuinfo id", arch)
}

// HostCPU identifies the CPU this program runs on.
func HostCPU() (CPU, error) {
	switch runtime.GOARCH {
	case "amd64", "386":
		return cpuFromFile("x86", "/proc/cpuinfo")
	case "ppc64", "ppc64le":
		return cpuFromFile("powerpc", "/proc/cpuinfo")
	case "arm64":
		b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1")
		if err != nil {
			return CPU{}, fmt.Errorf("read MIDR: %w", err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 64)
		if err != nil {
			return CPU{}, fmt.Errorf("read MIDR %q: %w", strings.TrimSpace(string(b)), err)
		}
		return CPU{Arch: "arm64", ID: fmt.Sprintf("0x%016x", v)}, nil
	}
	return CPU{}, fmt.Errorf("identify CPU: no pmu-events support for %s", runtime.GOARCH)
}

func cpuFromFile(arch, path string) (CPU, error) {
	f, err := os.Open(path)
	if err != nil {
		return CPU{}, fmt.Errorf("identify CPU: %w", err)
	}
	defer f.Close()
	return ParseCPUInfo(arch, f)
}

// FindDir returns the table directory for cpu (relative to root, e.g. "x86/skylake")
// from root/<arch>/mapfile.csv, matching as perf does: x86 lines are POSIX extended
// regular expressions that must match the whole id (without the stepping when the line
// has none); arm64 lines are MIDRs compared with the variant and revision fields
// masked; powerpc lines are regular expressions over the whole PVR.
func FindDir(root string, cpu CPU) (string, error) {
	path := filepath.Join(root, cpu.Arch, "mapfile.csv")
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("find pmu-events table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "Family-model") {
			continue
		}
		parts := strings.Split(line, ",")
		if len(parts) < 4 || strings.TrimSpace(parts[3]) != "core" {
			continue
		}
		ok, err := idMatches(cpu.Arch, strings.TrimSpace(parts[0]), cpu.ID)
		if err != nil {
			return "", fmt.Errorf("find pmu-events table: %s: %w", path, err)
		}
		if ok {
			return cpu.Arch + "/" + strings.TrimSpace(parts[2]), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "", fmt.Errorf("find pmu-events table for %s %s in %s: %w", cpu.Arch, cpu.ID, path, ErrNoMatch)
}

func idMatches(arch, pattern, id string) (bool, error) {
	if arch == "arm64" {
		want, err1 := strconv.ParseUint(pattern, 0, 64)
		have, err2 := strconv.ParseUint(id, 0, 64)
		if err1 != nil || err2 != nil {
			return false, nil
		}
		// Variant [23:20] and revision [3:0] are zero in the mapfile.
		return have&^0x00f0000f == want, nil
	}
	target := id
	if arch == "x86" && strings.Count(pattern, "-") < 3 && strings.Count(id, "-") == 3 {
		target = id[:strings.LastIndex(id, "-")]
	}
	re, err := regexp.CompilePOSIX("^(" + pattern + ")$")
	if err != nil {
		return false, fmt.Errorf("compile %q: %w", pattern, err)
	}
	return re.MatchString(target), nil
}

// Host loads the host's table from the arch root.
func Host(root string) (*Table, error) {
	cpu, err := HostCPU()
	if err != nil {
		return nil, err
	}
	dir, err := FindDir(root, cpu)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
		return nil, fmt.Errorf("load pmu-events for %s %s: mapfile.csv names %s, which this tree lacks: %w", cpu.Arch, cpu.ID, dir, err)
	}
	return Load(root, dir)
}

// Open loads the table dir names: the host's (Host) when dir is an arch root (the
// directory holding x86/, arm64/, ...), or else the CPU directory dir itself
// (.../arch/x86/skylake, .../arch/arm64/arm/neoverse-n1: the arch root is the parent of
// the directory holding mapfile.csv), for a CPU that mapfile.csv does not map the host
// to.
func Open(dir string) (*Table, error) {
	clean := filepath.Clean(dir)
	for up, p := 0, filepath.Dir(clean); up < 3 && p != filepath.Dir(p); up, p = up+1, filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, "mapfile.csv")); err == nil {
			root := filepath.Dir(p)
			rel, err := filepath.Rel(root, clean)
			if err != nil {
				return nil, fmt.Errorf("load pmu-events %s: %w", dir, err)
			}
			return Load(root, rel)
		}
	}
	return Host(clean)
}
