// Package metrics defines Basin's Prometheus metrics and collects them
// from where the numbers already live, instead of keeping second copies:
// the cache's Stats, the file system's Stats, and a decorator around the
// object store that times and counts every bucket request by type.
//
// Per FUSE process (one volume; served on its admin socket, see
// pkg/admin) — NewProcessRegistry:
//
//	basin_cache_hits_total, basin_cache_misses_total          reads of partly cached files
//	basin_cache_hit_bytes_total, basin_cache_miss_bytes_total
//	basin_cache_local_opens_total                             opens of fully cached files (passthrough or splice)
//	basin_cache_evictions_total                               objects evicted
//	basin_cache_used_bytes, basin_cache_capacity_bytes, basin_cache_objects
//	basin_cache_pinned_objects                                held by open handles or fetches
//	basin_cache_buffer_bytes                                  block buffers' memory (off the Go heap)
//	basin_cache_prefetch_objects_total, basin_cache_prefetch_bytes_total
//	                                                          directory prefetch (pkg/cache prefetch.go)
//	basin_cache_prefetch_read_bytes_total                     prefetched bytes opened later
//	basin_cache_prefetch_evicted_bytes_total                  prefetched bytes evicted unread
//	basin_fuse_passthrough_opens_total, basin_fuse_user_opens_total
//	basin_fuse_read_bytes_total                               bytes returned by user-space READs
//	basin_fuse_uploads_total, basin_fuse_upload_bytes_total
//	basin_fuse_streamed_uploads_total, basin_fuse_streamed_bytes_total   uploads started while written
//	basin_fuse_stream_fallbacks_total{reason}                 rewrite|truncate|unlink|rename|error
//	basin_fuse_direct_write_bytes_total                       streamed appends staged with O_DIRECT
//	basin_fuse_pending_uploads, basin_fuse_pending_upload_bytes   acknowledged closes not uploaded (uploadMode: async)
//	basin_fuse_upload_failures_total                          failed background uploads (retried)
//	basin_fuse_upload_sync_fallbacks_total                    async closes over the bounds, uploaded synchronously
//	basin_fuse_recovered_uploads_total                        a dead predecessor's acknowledged files uploaded
//	basin_fuse_create_conflicts_total                         async O_EXCL creates whose upload met another object (kept aside)
//	basin_bucket_requests_total{op}                           stat|get|list|put|delete|copy|delete_prefix
//	basin_bucket_request_errors_total{op,reason}
//	basin_bucket_bytes_total{op}                              bytes read (get) and written (put)
//	basin_bucket_request_duration_seconds{op}                 until the store answered (get: first byte)
//	basin_bucket_get_duration_seconds                         a GET from request to body closed
//	process_*                                                 memory, CPU, descriptors
//
// The node plugin (NodeCollector, VolumeGatherer) re-exports every FUSE
// process's metrics with a `volume` label and adds:
//
//	basin_node_heals_total                  heals of all volumes since the plugin started
//	basin_volume_heals_total{volume}        heals since the volume was staged
//	basin_volume_healthy{volume}            1 while the volume is served and healthy
//	basin_volume_scrape_up{volume}          1 if the volume's FUSE process answered the scrape
//	basin_node_staged_volumes
//
// The CSI services (pkg/driver) count their calls:
// basin_csi_operations_total{method,code} and
// basin_csi_operation_duration_seconds{method}.
//
// The controller's pass over the shared cache tiers has its metrics in
// pkg/tiersweep (Metrics; the controller links no FUSE code through them),
// labelled with the tier's sharedCache URL:
//
//	basin_controller_tier_bytes{tier}, basin_controller_tier_objects{tier}   after the last pass
//	basin_controller_tier_evicted_objects_total{tier,reason}               age|budget
//	basin_controller_tier_evicted_bytes_total{tier}
//	basin_controller_tier_passes_total{tier,result}                         ok|error
//	basin_controller_tier_last_success_timestamp_seconds{tier}
package metrics
