package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/queue"
)

// apiServer is package httpapi's routes and pages on a net/http server,
// and the listener it serves.
type apiServer struct {
	http *http.Server
	ln   net.Listener
	auth httpapi.Authenticator
}

// listenAPI mounts package httpapi's routes, admin web UI and request page (and,
// with -dev, the dev sign-in), behind the authenticator the flags ask for, and
// listens on cfg.addr. tracer, if not nil, makes the server's spans.
func listenAPI(ctx context.Context, cfg config, client *asyncevent.Client, q queue.Queue, tracer trace.TracerProvider, logger *slog.Logger) (*apiServer, error) {
	auth, err := authenticator(ctx, cfg)
	if err != nil {
		return nil, err
	}
	api := &apiServer{auth: auth}
	srv, err := httpapi.NewServer(httpapi.ServerOptions{
		Client:         client,
		Queue:          q,
		Authenticator:  auth,
		Admission:      admission(cfg),
		TracerProvider: tracer,
		PublicEndpoint: cfg.otelPublic,
		Logger:         logger,
		RequestTimeout: cfg.requestTimeout,
	})
	if err == nil {
		err = srv.MountAdminUI(httpapi.AdminUIOptions{})
	}
	// The page of a user's request, its Release form signed with a key derived from
	// the HS256 secret; an identity provider's tokens would need a secret of its own
	// (RequestPageOptions.Secret).
	if err == nil && cfg.jwks.URL == "" {
		err = srv.MountRequestPage(httpapi.RequestPageOptions{})
	}
	if err == nil && cfg.dev {
		srv.Mount("GET /dev/sign-in", httpapi.Public, devSignIn(cfg.jwtSecret))
	}
	if err == nil {
		api.ln, err = net.Listen("tcp", cfg.addr)
	}
	if err != nil {
		api.closeAuth()
		return nil, err
	}
	api.http = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      cfg.requestTimeout + 5*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return api, nil
}

// closeAuth stops the refreshes of the identity provider's key set (-jwks-url).
func (api *apiServer) closeAuth() {
	if jwks, ok := api.auth.(*httpapi.JWKSAuthenticator); ok {
		jwks.Close()
	}
}

// serve serves the API until ctx ends or serving fails, then, within
// -shutdown-timeout, drains the HTTP requests in flight, stops the workers, and
// writes the ingest's last progress counts (the workers wrote theirs as they
// stopped).
func serve(ctx context.Context, cfg config, api *apiServer, workers workers, client *asyncevent.Client, logger *slog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- api.http.Serve(api.ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down: draining HTTP, then stopping the workers")
	case serveErr = <-served:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	errs := []error{api.http.Shutdown(shutdownCtx), workers.stop(shutdownCtx), client.FlushProgress(shutdownCtx)}
	if !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, serveErr)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
