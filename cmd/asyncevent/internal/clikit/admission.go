package clikit

import "github.com/asyncevent/asyncevent"

// AdmissionOf is the admission of a first-come event: ranked (-ranked) or by
// processing order.
func AdmissionOf(ranked bool) asyncevent.Admission {
	if ranked {
		return asyncevent.AdmissionRanked
	}
	return asyncevent.AdmissionProcessing
}
