//! The macros that paste every case into a store's integration test. The case list
//! lives here once; adding a `pub async fn` to an area module means adding its name
//! below, and every store picks it up.

/// Expands to `mod $name { mod <area> { #[test] fn <case>() { … } … } … }`: one test per
/// conformance case, each on its own runtime with a fresh store from `$factory`
/// (an expression, evaluated per case, whose type implements [`crate::StoreFactory`];
/// it may name items of the calling module).
///
/// ```text
/// duraq_tests::store_suite!(memory, MemoryFactory);
/// ```
#[macro_export]
macro_rules! store_suite {
    ($name:ident, $factory:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::__store_cases! { $factory;
                wait: [
                    a_wait_answers_with_the_job_once_it_completes,
                    a_finished_job_answers_at_once_with_its_outcome,
                    a_wait_times_out_with_the_job_as_it_is, a_wait_for_no_job_is_job_not_found,
                    an_ephemeral_job_deleted_as_it_completes_ends_the_wait,
                    a_report_through_another_handle_ends_the_wait,
                ],
                normalization: [
                    defaults_are_applied, options_are_persisted, blank_queue_is_default,
                    past_schedule_is_due_now, invalid_job_name, invalid_max_retries,
                    invalid_scheduled_at, invalid_concurrency, invalid_idempotency_key,
                    invalid_timeout, unsupported_option_combination, invalid_schedule_key,
                ],
                names: [
                    invalid_queue_names_are_rejected, invalid_concurrency_keys_are_rejected,
                    longest_concurrency_key_works_end_to_end,
                    capped_queue_with_longest_name_is_claimable,
                ],
                run_in: [
                    run_in_resolves_with_the_store_clock,
                    idempotent_run_in_replays_after_the_clock_moved,
                    absolute_and_immediate_keyed_requests_still_replay,
                ],
                enqueue: [
                    enqueue_returns_created_and_persists, an_id_a_finished_job_holds_is_refused,
                    future_job_waits_until_due,
                    concurrency_cap_conflict, the_first_failing_check_wins_and_keeps_nothing,
                    batch_is_one_mutation, batch_sees_earlier_jobs,
                    batch_is_all_or_nothing, next_scheduled_at_for_timer, work_signal_moves,
                    list_jobs_filters_and_order, list_jobs_pages_by_cursor_and_key,
                ],
                large_batches: [
                    a_large_mixed_batch_is_decided_in_order,
                    large_batch_rows_match_single_enqueues, a_refused_large_batch_changes_nothing,
                ],
                schedule_keys: [
                    replace_without_owner, replace_queued_owner_cancels_it,
                    replace_running_owner_moves_ownership, cancel_outcomes, wake_outcomes,
                    wake_keeps_retry_state, get_in_every_state, replace_refuses_idempotency_and_dedupe,
                ],
                schedule_ownership: [
                    superseded_job_never_removes_newer_owner, high_water_survives_release_and_prune,
                    retry_keeps_ownership,
                ],
                idempotency: [
                    first_creates_then_replays, replay_in_every_status, replay_after_prune,
                    request_differences_conflict, timeout_presence_is_part_of_request,
                    scheduled_replay_matches_time, scope_is_name_queue_and_key,
                    operator_retry_does_not_reopen_scope,
                ],
                dedupe: [
                    returns_earliest_queued, earlier_created_wins_at_same_time, canonical_args_match,
                    other_options_do_not_matter, only_identical_name_args_queue,
                    later_scheduled_is_not_matched, not_handed_off_or_terminal,
                    jobs_back_in_the_queue_are_matched, a_batch_dedupes_against_its_own_jobs,
                    plain_batch_jobs_are_matched_in_a_seen_scope,
                    jobs_before_the_first_request_are_matched,
                ],
                concurrency: [
                    explicit_key_caps_across_workers, saturated_key_does_not_block_others,
                    queue_cap_from_claim_config, capped_queue_skipped_not_blocking,
                    reservation_released_on_every_exit, keyed_cancel_of_running_owner_keeps_reservation,
                    reconcile_is_a_no_op_when_consistent,
                ],
                aging: [
                    a_due_job_rises_one_step_per_interval_up_to_the_bound,
                    an_aged_job_is_claimed_first_and_a_retry_gives_the_steps_back,
                    a_pass_keeps_to_its_limit_and_its_oldest_due_time,
                ],
                sequences: [
                    a_sequence_runs_one_job_at_a_time_in_order,
                    a_failed_job_holds_its_sequence_until_retried_to_completion,
                    a_cancelled_or_deleted_job_lets_its_sequence_go_on,
                    continue_lets_the_next_run_and_a_retry_waits_its_turn,
                    sequences_of_different_keys_never_hold_each_other,
                    a_bad_sequence_is_refused_and_writes_nothing,
                    a_search_by_sequence_finds_its_jobs,
                ],
                fairness: [
                    keys_take_turns_within_a_queue,
                    a_claim_starts_after_the_lane_the_last_one_ended_on,
                    a_key_alone_drains_in_claim_order,
                    a_job_due_before_those_already_claimed_comes_first,
                    a_job_passed_by_at_its_cap_comes_first_once_free,
                    jobs_without_a_key_take_turns_as_one_key,
                    a_weight_gives_a_key_turns_in_a_row,
                    priorities_queues_and_pauses_keep_their_meaning,
                    a_job_keeps_its_key_and_a_search_finds_it,
                    a_queue_lists_its_keys_with_their_queued_jobs,
                    a_bad_fairness_key_is_refused_and_writes_nothing,
                ],
                ephemeral: [
                    an_ephemeral_job_is_deleted_when_it_completes,
                    failed_and_cancelled_ephemeral_jobs_are_kept,
                    an_ephemeral_job_replays_and_frees_its_key,
                    an_ephemeral_job_with_dependents_is_kept,
                ],
                costs: [
                    a_cost_takes_that_many_units_of_the_cap, every_exit_gives_back_the_whole_cost,
                    a_job_costing_more_than_its_queue_cap_runs_alone,
                    a_cost_takes_that_many_starts_of_the_rate, an_impossible_cost_is_refused,
                    the_cost_is_part_of_the_request,
                ],
                claim: [
                    claim_sets_lease_fields, claim_order, claim_filters_and_limits,
                    each_claim_gets_a_fresh_lease, stale_reports_change_nothing,
                    report_batch_fences_each, report_and_claim_reports_first,
                    expired_jobs_are_cancelled_not_claimed,
                    a_job_waiting_to_retry_expires,
                    the_recovery_pass_cancels_expired_jobs_no_claim_reaches,
                ],
                retry: [
                    completed_keeps_lease_history, backoff_schedule, retry_override_and_discard,
                    exhausted_retries_fail, reschedule_uses_no_attempt, reschedule_keeps_last_error,
                ],
                error_history: [
                    failed_attempts_are_listed_in_order, history_keeps_the_newest_twenty,
                    recovered_lease_appends_with_the_dead_worker,
                    reschedule_and_return_append_nothing, stale_report_appends_nothing,
                    operator_retry_keeps_the_history,
                ],
                history: [
                    totals_move_once_per_outcome_and_queue,
                    retries_count_failed_and_lost_attempts_only,
                    operator_retry_and_prune_never_lower_totals,
                    the_first_sample_of_a_minute_wins,
                    samples_older_than_seven_days_are_deleted,
                    a_second_handle_sees_the_same_history,
                    a_fresh_database_counts_from_its_first_enqueue,
                ],
                recovery: [
                    stale_worker_is_recovered, heartbeat_keeps_lease, stale_boundary_is_strict,
                    claim_counts_as_heartbeat, exhausted_lease_is_orphaned,
                    only_stale_workers_and_sorted, recovered_job_runs_again,
                ],
                counts: [
                    fresh_store_is_empty, revision_per_call, recovery_and_batch_are_one_mutation,
                    report_batch_is_one_mutation, prune_is_one_mutation_per_batch,
                ],
                queue_counts: [
                    per_queue_counts_follow_every_transition,
                    revision_is_shared_and_rollbacks_change_nothing,
                    cross_queue_net_zero_moves_the_revision,
                    latency_is_the_age_of_the_oldest_due_job,
                ],
                pause: [
                    paused_queue_is_skipped_not_blocking,
                    pause_is_idempotent_and_not_a_count_mutation,
                    resume_makes_jobs_claimable_in_order, handed_off_jobs_finish_after_a_pause,
                    pause_is_durable, invalid_queue_name_changes_nothing,
                ],
                priority: [
                    higher_priority_is_claimed_first, queue_priority_comes_before_job_priority,
                    future_high_priority_jobs_do_not_hide_due_ones,
                    priority_is_persisted_and_defaults_to_zero, invalid_priority_changes_nothing,
                    priority_is_part_of_an_idempotent_request,
                ],
                rate_limits: [
                    at_most_max_starts_per_period, report_and_claim_applies_the_limit,
                    the_window_slides,
                    a_saturated_key_never_blocks_other_jobs, a_key_keeps_its_first_limit,
                    invalid_rate_limits_change_nothing,
                    rate_limit_is_persisted_and_part_of_the_request,
                 the_cap_is_checked_before_the_rate,],
                workers: [
                    registered_workers_are_listed_with_state_and_running_jobs,
                    registering_again_replaces_and_removing_forgets,
                    due_job_names_groups_the_oldest_due_jobs,
                    unhandled_jobs_are_those_no_alive_worker_claims,
                    recovery_forgets_workers_gone_for_a_day,
                ],
                prune: [
                    ages_are_strict_and_per_category, live_jobs_never_pruned, batches_are_reported,
                    prune_keeps_ownership_and_operations,
                ],
                progress: [
                    progress_and_lines_round_trip_and_change_no_job,
                    only_the_newest_hundred_lines_are_kept,
                    a_stale_or_made_up_lease_writes_nothing,
                    text_round_trips_at_the_byte_bound,
                    operator_retry_keeps_progress_and_numbering_goes_on,
                    prune_and_bulk_delete_remove_a_jobs_progress,
                ],
                durable: [
                    a_step_record_is_fenced_and_keeps_its_first_output,
                    a_jobs_steps_go_with_the_job,
                    a_step_runs_once_across_a_sleep_and_a_retry,
                    bad_step_names_fail_the_job_with_their_codes,
                ],
                signals: [
                    a_signal_is_kept_once_per_job_and_name,
                    a_wait_reported_after_its_signal_arrived_runs_again,
                    a_wait_pends_until_its_signal_wakes_it,
                    a_signal_sent_before_the_wait_is_read_at_once,
                    a_wait_that_timed_out_stays_timed_out,
                ],
                children: [
                    every_end_of_a_child_reaches_its_parent,
                    a_gone_or_finished_parent_does_not_hold_up_its_child,
                    a_signal_name_of_duraqs_own_is_refused,
                    a_child_is_spawned_once_across_its_parents_replays,
                    a_failed_child_is_its_parents_to_judge,
                ],
                operations: [
                    operation_rides_along, start_attempt_stamps_once, record_result,
                    missing_operation_not_found, operation_key_in_use_conflicts,
                ],
                cancel_running: [
                    lost_leases_tell_cancelled_from_lost, cancelling_a_running_job_is_announced,
                    keyed_cancel_keeps_or_stops_the_running_owner,
                    keyed_cancel_stop_of_a_queued_owner_just_cancels,
                    replace_keeps_or_stops_the_running_owner,
                    a_cancel_through_another_handle_is_seen_by_the_lease_check,
                ],
                operator: [
                    retry_terminal_jobs, retry_rejects_live_and_missing, cancel_live_jobs,
                    cancel_rejects_terminal_and_missing, get_job_in_every_status,
                    retry_takes_free_key_back, retry_leaves_taken_key_alone,
                ],
                cron_zones: [zoned_ticks_follow_the_wall_clock_across_dst],
                trace_context: [
                    trace_parent_round_trips_on_every_read,
                    every_insert_path_stores_the_trace_parent,
                    trace_parent_is_not_part_of_an_idempotent_request,
                    invalid_trace_parent_changes_nothing,
                ],
                bulk: [
                    each_action_changes_what_it_may_and_skips_the_rest,
                    nothing_changed_is_no_mutation, a_bulk_cancel_tells_the_running_jobs_worker,
                    a_filter_is_walked_in_bounded_batches, a_dry_run_counts_and_changes_nothing,
                    an_unknown_id_changes_nothing, run_now_makes_only_jobs_due_later_due,
                    run_now_by_filter_counts_exactly,
                ],
                fan_out: [
                    a_wide_fan_out_is_released_in_bounded_steps,
                    a_failure_cascades_through_the_backlog,
                    a_retry_mid_backlog_drops_the_entry_and_the_rest_waits,
                    deleting_a_job_drops_its_backlog_entry, a_worker_drains_a_wide_fan_out,
                ],
                dependencies: [
                    a_dependent_waits_pending_until_its_last_dependency_completes,
                    the_release_is_part_of_the_completing_mutation,
                    a_release_keeps_a_later_own_due_time,
                    a_completed_dependency_is_satisfied_at_once,
                    an_unknown_dependency_writes_nothing, a_batch_may_depend_on_its_own_earlier_jobs, the_checks_come_before_the_dependencies,
                    a_run_of_waiting_jobs_is_judged_in_batch_order,
                    a_failure_cancels_down_the_graph, the_run_policy_releases_after_a_failure,
                    orphaned_and_cancelled_dependencies_end_their_edges_too,
                    a_retry_gives_back_what_a_dependency_cancelled,
                    a_handlers_output_is_kept_on_the_job,
                    pruning_a_dependency_keeps_its_released_dependent,
                    an_idempotent_dependent_replays_and_a_new_edge_conflicts,
                    a_replacement_refuses_dependencies,
                    a_workflow_is_inserted_whole_and_found_by_its_id,
                ],
                workflow_list: [
                    workflows_are_listed_in_pages_largest_id_first,
                    a_summary_counts_steps_per_status_and_names_the_state,
                    a_name_lists_only_its_workflows_in_pages,
                ],
                workflow_append: [
                    a_step_after_a_completed_step_is_queued_at_once,
                    a_step_after_an_open_step_waits_until_it_completes,
                    a_step_after_a_failed_step_follows_its_policy, a_refused_append_writes_nothing,
                    a_keyed_append_replays_its_ids, two_appends_of_one_step_name_never_both_insert,
                ],
                search: [
                    several_statuses_match_any_of_them, each_filter_narrows_alone_and_combined,
                    args_containment_follows_jsonb, error_text_ignores_case,
                    finished_bounds_match_terminal_jobs_only,
                    a_small_scan_budget_resumes_without_repeats, id_prefixes_resolve_to_one_job,
                ],
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_cases {
    ($factory:expr; $($area:ident : [$($case:ident),* $(,)?]),* $(,)?) => {
        $(
            mod $area {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[test]
                    fn $case() {
                        $crate::block_on(async {
                            let h = $crate::Harness::new($factory).await;
                            $crate::$area::$case(&h).await;
                        });
                    }
                )*
            }
        )*
    };
}

/// Expands to one `#[test]` that runs the model-based property suite
/// ([`crate::model`]) with stores from `$factory` against `MemoryStore`.
///
/// ```text
/// duraq_tests::model_suite!(sqlite_model, SqliteFactory::new());
/// ```
#[macro_export]
macro_rules! model_suite {
    ($name:ident, $factory:expr) => {
        #[test]
        fn $name() {
            $crate::model::check_against_reference($factory);
        }
    };
}
