// Package runner plays the benchmark's scenarios on each system under test
// and collects one report cell per system and phase.
//
// Each scenario starts from a cold system: unmounted, its persistent cache
// deleted, mounted again, page cache dropped. Its phases then run in order
// on that mount (warm, remount with the cache kept, drop_caches...). Every
// phase runs under a deadline (Config.PhaseTimeout); what the WAN proxy
// counted during the phase goes into the cell. Phases check what they
// read — byte counts always, and the content of a sample of files outside
// the timed part — so a system that returns wrong data fails instead of
// winning.
//
// The runner knows nothing about servers or proxies: Hooks give it the
// traffic counters, the bucket-side durability check and the cleanup of
// earlier write phases.
package runner
