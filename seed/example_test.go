package seed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/asyncevent/asyncevent/seed"
)

// An HMAC source gives each event its own seed, the same every time it is asked.
func ExampleHMAC() {
	secret := bytes.Repeat([]byte{0x5e}, seed.MinSecretBytes) // in production: openssl rand -hex 32
	seeds, err := seed.HMAC(secret)
	if err != nil {
		panic(err)
	}
	s, err := seeds.Seed(context.Background(), "spring-draw")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", s)

	_, err = seed.HMAC(secret[:16])
	fmt.Println(errors.Is(err, seed.ErrShortSecret), err)
	// Output:
	// 45ba3d165fc036e84a4a533a5b934a20a1a3dce4065fa2e694de4571ed8a7ded
	// true seed: secret too short: 16 bytes, want at least 32
}

// Message is what a KMS GenerateMac must MAC to give the seed HMAC gives.
func ExampleMessage() {
	fmt.Printf("%q\n", seed.Message("spring-draw"))
	// Output:
	// "asyncevent/lottery-seed/v1\x00spring-draw"
}
