package dynamodblocal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary act as a program that starts DynamoDB
// Local and then dies without Stop (see TestJavaDiesWithParent).
const helperEnv = "DYNAMODBLOCAL_TEST_HELPER"

// TestStartDefault runs the real thing with default options: whatever Start
// finds (without DYNAMODB_ENDPOINT, and with no container starter: the jar) must
// serve ListTables and CreateTable, and be gone after Stop. It fails, never
// skips, when no DynamoDB Local can be had, printing what to install.
func TestStartDefault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	began := time.Now()
	inst, err := Start(ctx, Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Logf("source=%s endpoint=%s after %s", inst.Source, inst.Endpoint, time.Since(began).Round(time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			_ = inst.Stop()
		}
	}()

	client, err := NewClient(inst.Endpoint)
	require.NoError(t, err)
	_, err = client.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)

	table := fmt.Sprintf("dynamodblocal_test_%d", time.Now().UnixNano())
	_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	require.NoError(t, err)
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
	})
	require.NoError(t, err)
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: "a"}, out.Item["pk"])

	// Instance.Client is the same database; another access key is another one
	// (unless the DynamoDB Local from the environment runs with -sharedDb).
	tables, err := inst.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	require.Contains(t, tables.TableNames, table)
	if inst.Source != SourceEnv {
		other, err := NewClient(inst.Endpoint, func(o *dynamodb.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider("otherkey", "otherkey", "")
		})
		require.NoError(t, err)
		tables, err := other.ListTables(ctx, &dynamodb.ListTablesInput{})
		require.NoError(t, err)
		require.NotContains(t, tables.TableNames, table, "without -sharedDb tables are per access key")
	}

	// An error reply must come back as the modelled error, not as a
	// checksum failure (DynamoDB Local sends no CRC32 on errors).
	_, err = client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("no_such_table")})
	var notFound *types.ResourceNotFoundException
	require.ErrorAs(t, err, &notFound)

	require.NoError(t, inst.Stop())
	require.NoError(t, inst.Stop(), "Stop must be idempotent")
	stopped = true
	if inst.Source != SourceEnv {
		requireRefused(t, inst.Endpoint)
	}
}

// requireRefused fails unless nothing accepts connections at endpoint.
func requireRefused(t *testing.T, endpoint string) {
	t.Helper()
	addr := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", endpoint)
	}
}

// TestStartExplainsWhatIsMissing runs Start where nothing can be had: no
// DYNAMODB_ENDPOINT, no container starter, and a PATH without java, then with
// java but without npm. It must fail fast and say what to install or set.
func TestStartExplainsWhatIsMissing(t *testing.T) {
	if !jarSupported {
		t.Skip("the jar path is Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	t.Setenv(EnvEndpoint, "")
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	java, javaErr := exec.LookPath("java") // for the second half
	require.NoError(t, os.Symlink(sh, filepath.Join(bin, "sh")))
	t.Setenv("PATH", bin)
	opts := Options{CacheDir: filepath.Join(dir, "cache"), Logf: t.Logf}

	began := time.Now()
	_, err = Start(ctx, opts)
	require.Error(t, err)
	t.Log(err)
	for _, want := range []string{EnvEndpoint, "dynamodblocal/container", "Java 17+", "npm", "java not found"} {
		require.ErrorContains(t, err, want)
	}
	require.Less(t, time.Since(began), 5*time.Second)

	require.NoError(t, javaErr, "java is needed for the second half of this test")
	require.NoError(t, os.Symlink(java, filepath.Join(bin, "java")))
	_, err = Start(ctx, opts)
	require.Error(t, err)
	t.Log(err)
	require.ErrorContains(t, err, "npm not found")
}

// TestJarStartFailureShowsOutput runs a fake java that fails like an old
// JRE, or like a port clash, against a fake install: the error must carry
// java's last lines, and a port clash must be retried.
func TestJarStartFailureShowsOutput(t *testing.T) {
	if !jarSupported {
		t.Skip("the jar path is Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	pkg := filepath.Join(cacheDir, npmPackage+"-"+npmVersion)
	require.NoError(t, os.MkdirAll(filepath.Join(pkg, "lib", "x", "DynamoDBLocal_lib"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "lib", "x", "DynamoDBLocal.jar"), []byte("not a jar"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, markerFile), []byte("lib/x/DynamoDBLocal.jar\n"), 0o644))

	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(sh, filepath.Join(bin, "sh")))
	t.Setenv("PATH", bin)
	fakeJava := func(script string) {
		require.NoError(t, os.WriteFile(filepath.Join(bin, "java"), []byte("#!"+sh+"\n"+script), 0o755))
	}

	fakeJava("echo 'Error: LinkageError occurred while loading main class (UnsupportedClassVersionError)' >&2\nexit 1\n")
	_, err = startJar(ctx, cacheDir, 0, t.Logf)
	require.Error(t, err)
	t.Log(err)
	require.ErrorContains(t, err, "UnsupportedClassVersionError")
	require.ErrorContains(t, err, "Java 17+")

	var logs []string
	var mu sync.Mutex
	fakeJava("echo 'java.net.BindException: Address already in use' >&2\nexit 1\n")
	_, err = startJar(ctx, cacheDir, 0, func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(f, a...))
	})
	require.ErrorIs(t, err, errPortTaken)
	retries := 0
	for _, l := range logs {
		if strings.Contains(l, "was taken, retrying") {
			retries++
		}
	}
	require.Equal(t, jarPortAttempts-1, retries)
}

// TestInstallFreshAndReuse installs into an empty cache dir from three
// goroutines at once (the flock must let exactly one of them run npm), then
// reuses the install, then repairs it after the jar was deleted.
func TestInstallFreshAndReuse(t *testing.T) {
	if !jarSupported {
		t.Skip("the jar path is Unix-only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cacheDir := filepath.Join(t.TempDir(), "cache")

	var mu sync.Mutex
	var logs []string
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		mu.Lock()
		logs = append(logs, line)
		mu.Unlock()
	}
	count := func(substr string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range logs {
			if strings.Contains(l, substr) {
				n++
			}
		}
		logs = nil
		return n
	}

	const n = 3
	results := make([]installation, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = install(ctx, cacheDir, logf) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[0], results[i])
	}
	require.Equal(t, 1, count("installing npm package"), "exactly one installer must run npm")
	require.FileExists(t, results[0].jar)
	require.DirExists(t, results[0].libDir)
	require.True(t, strings.HasPrefix(results[0].jar, cacheDir))

	// Nothing but the install and the lock file may be left behind.
	entries, err := os.ReadDir(cacheDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{".lock", npmPackage + "-" + npmVersion}, names)

	again, err := install(ctx, cacheDir, logf)
	require.NoError(t, err)
	require.Equal(t, results[0], again)
	require.Equal(t, 0, count("installing npm package"), "a finished install must be reused")

	require.NoError(t, os.Remove(results[0].jar))
	repaired, err := install(ctx, cacheDir, logf)
	require.NoError(t, err)
	require.Equal(t, 1, count("installing npm package"), "an install without its jar must be redone")
	require.FileExists(t, repaired.jar)
}

// TestJavaDiesWithParent starts java from a child process that then exits
// without Stop (os.Exit) or is SIGKILLed, and checks that java goes with it.
func TestJavaDiesWithParent(t *testing.T) {
	if !jarSupported {
		t.Skip("the jar path is Unix-only")
	}
	for _, mode := range []string{"exit", "kill"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"="+mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())

			var endpoint string
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if ep, ok := strings.CutPrefix(sc.Text(), "ENDPOINT "); ok {
					endpoint = ep
					break
				}
			}
			require.NotEmpty(t, endpoint, "helper printed no endpoint; stderr:\n%s", &stderr)
			port, err := strconv.Atoi(endpoint[strings.LastIndex(endpoint, ":")+1:])
			require.NoError(t, err)

			if mode == "kill" {
				require.NoError(t, cmd.Process.Kill()) // SIGKILL: no Go code runs
			}
			_, _ = io.Copy(io.Discard, stdout) // EOF once the helper is gone
			_ = cmd.Wait()

			require.Eventually(t, func() bool {
				c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
				if err != nil {
					return true
				}
				c.Close()
				return false
			}, 10*time.Second, 100*time.Millisecond, "java still listens on %d after its parent died", port)
			require.Eventually(t, func() bool { return len(javaPIDs(port)) == 0 },
				5*time.Second, 100*time.Millisecond, "java on port %d still running", port)
		})
	}
}

// javaPIDs lists processes (from /proc, where there is one) running
// DynamoDBLocal.jar on port.
func javaPIDs(port int) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	want := "\x00-port\x00" + strconv.Itoa(port) + "\x00"
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(b, []byte("DynamoDBLocal.jar")) && bytes.Contains(append(b, 0), []byte(want)) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// TestHelperProcess is not a test: run by TestJavaDiesWithParent with
// helperEnv set, it starts java, prints the endpoint and then exits without
// Stop ("exit") or waits to be killed ("kill").
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	inst, err := startJar(context.Background(), defaultCacheDir(), 0, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("ENDPOINT %s\n", inst.Endpoint)
	if mode == "exit" {
		os.Exit(0)
	}
	time.Sleep(time.Minute) // until SIGKILLed
	os.Exit(3)
}
