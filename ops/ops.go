// Package ops is the operator's operations, written once and served alike to the CLI, the pages,
// the JSON API and the CLI's --server mode. Each noun (Tables, …) is an interface here with its
// request types, which are also the JSON bodies of its API routes; the local implementation in
// this package calls the capability services, and ops/client implements the same interfaces
// over HTTP, so a command through a server takes the same path as a local one.
//
// Errors are of the kinds of package fault; an adapter maps a kind to its answer in one place
// (server/errors.go statusOf, cmd/trueup exitCode) and shows the error's text as it is.
//
// Adding an operation: a method on the noun's interface and its request type here, its local
// implementation beside it, its client method in ops/client, an HTTP route (and a page, if
// any) in server/, a CLI verb in cmd/trueup, an entry in server/authz.go. See ARCHITECTURE.md.
package ops
