"""Which tests hold each promise of the design's invariants (numbered as there).

`tests/test_invariants.py` fails when a promise has no test, when a test named here no
longer exists, or when a part still to come names no open issue. A reviewer or the
engineer on call starts here to see what proves a promise and what does not yet.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Promise:
    number: int
    says: str
    tests: tuple[str, ...]  # "path::test function"
    still_to_come: str = ""  # a part no test holds yet, and the issue that brings it


B, P, A, F = "tests/booking/", "tests/payment/", "tests/access/", "tests/foundation/"
N = "tests/notify/"
OPS, GW = "tests/operations/", "tests/gateway/"
E2E, FAULTS = "tests/e2e/", "tests/faults/"
OBS = "tests/observability/"
SOAK = "tests/chaos/test_soak.py::"

PROMISES = (
    Promise(
        1,
        "a slot never has more than one live booking, enforced by the database",
        (
            B + "test_checkout.py::test_fifty_customers_racing_for_one_slot_get_one_booking",
            B + "test_moves.py::test_opposite_reschedules_running_together_never_deadlock_nor"
            "_double_book",
            B + "test_model.py::test_any_interleaving_of_commands_and_events_keeps_the_invariants",
        ),
    ),
    Promise(
        2,
        "one logical checkout is one booking; replays equal or idempotency_conflict",
        (
            B + "test_checkout.py::test_fifty_concurrent_replays_of_one_checkout_all_get_the_same"
            "_booking",
            B + "test_checkout.py::test_a_key_reused_for_a_different_request_is_a_conflict_and"
            "_changes_nothing",
            B + "test_checkout.py::test_the_same_key_in_another_organisation_is_an_unrelated"
            "_checkout",
        ),
    ),
    Promise(
        3,
        "the idempotency key is stored only as a keyed hash",
        (
            B + "test_checkout.py::test_the_idempotency_key_is_stored_only_as_a_keyed_hash",
            P
            + "test_orders.py::test_a_replay_is_found_by_the_keys_hash_and_no_table_holds_the_key",
        ),
    ),
    Promise(
        4,
        "price, terms and window are snapshots a later change never reaches",
        (
            B + "test_checkout.py::test_changing_a_slots_price_after_checkout_leaves_the_booking"
            "_price_alone",
            B + "test_moves.py::test_a_reschedule_keeps_the_price_moves_the_window_and_closes_a"
            "_disclosed_slot",
        ),
    ),
    Promise(
        5,
        "a pass balance never goes below zero; the last entry is redeemed once",
        (
            B + "test_passes.py::test_ten_redemptions_racing_for_the_last_entry_leave_exactly_one"
            "_booking",
            B + "test_passes.py::test_a_paid_pass_order_is_credited_once_however_often_it_is"
            "_announced",
        ),
    ),
    Promise(
        6,
        "an unpaid hold expires by a durable timer that survives restarts",
        (
            B + "test_holds.py::test_an_unpaid_hold_expires_and_tells_the_payment_service",
            B + "test_holds.py::test_a_hold_that_fell_due_while_the_service_was_down_expires_after"
            "_restart",
        ),
    ),
    Promise(
        7,
        "nothing the browser says changes payment state; a notification is a hint",
        (
            P + "test_notifications.py::test_the_body_is_a_hint_a_paid_claim_for_an_unpaid_payment"
            "_changes_nothing",
            P + "test_notifications.py::test_an_amount_changed_at_the_gateway_opens_an_incident_and"
            "_no_transition",
            P + "test_notifications.py::test_forged_stale_or_altered_notifications_are_rejected_and"
            "_change_nothing",
        ),
    ),
    Promise(
        8,
        "transitions are conditional: repeated, late or reordered notifications",
        (
            P + "test_notifications.py::test_ten_duplicated_notifications_confirm_once_with_one"
            "_event",
            P + "test_notifications.py::test_a_late_paid_notification_never_moves_a_refunded"
            "_payment_back",
            P + "test_payment_properties.py::test_payment_invariants_hold_over_any_interleaving",
        ),
    ),
    Promise(
        9,
        "money after cancellation or expiry never resurrects the booking; it is refunded",
        (
            E2E + "test_late_money.py::test_a_payment_settled_after_cancellation_is_refunded_and"
            "_never_resurrects_the_booking",
            P + "test_gateway_calls.py::test_a_refund_the_gateway_never_confirms_ends_refund_failed"
            "_with_an_incident",
        ),
    ),
    Promise(
        10,
        "every paid payment belongs to a confirmed booking, a paid order or a refund",
        (
            P + "test_payment_properties.py::test_payment_invariants_hold_over_any_interleaving",
            P + "test_gateway_calls.py::test_money_without_a_booking_is_refunded",
        ),
    ),
    Promise(
        11,
        "orders: key unique per organisation, conflicts, one open subscription",
        (
            P + "test_orders.py::test_the_same_key_with_another_plan_version_is_a_conflict_and"
            "_changes_nothing",
            P + "test_orders.py::test_concurrent_replays_of_one_key_are_serialised_into_one_order",
            P + "test_orders.py::test_a_second_subscription_while_one_is_open_is_order_exists",
            F + "test_inbox.py::test_another_integrity_error_is_an_error_not_a_duplicate",
        ),
    ),
    Promise(
        12,
        "the local transaction commits before any provider call; a stable provider key",
        (
            P + "test_slow_gateway.py::test_a_hanging_create_delays_no_other_payment_and_holds_no"
            "_transaction",
            P + "test_gateway_calls.py::test_a_create_answered_with_a_timeout_is_retried_with_the"
            "_same_provider_key",
        ),
    ),
    Promise(
        13,
        "a credential only inside the activation window, for a still confirmed booking",
        (
            A + "test_provisioning.py::test_no_code_is_created_before_the_activation_window_even"
            "_by_a_timer_fired_early",
            A + "test_provisioning.py::test_no_code_is_created_once_the_window_is_over",
            A + "test_provisioning.py::test_an_older_move_arriving_after_a_newer_one_never_takes"
            "_the_door_back",
            A + "test_access_properties.py::test_access_rules_hold_over_any_interleaving",
        ),
    ),
    Promise(
        14,
        "after an ambiguous time-out the alias is looked up; duplicates are an incident",
        (
            A + "test_provisioning.py::test_a_create_answered_with_a_time_out_leaves_exactly_one"
            "_code_and_adopts_it",
            A + "test_provisioning.py::test_a_create_that_never_arrived_is_sent_again_after_the"
            "_look_up_finds_nothing",
            A + "test_provisioning.py::test_a_duplicate_on_the_device_is_an_incident_and_neither"
            "_code_is_adopted",
        ),
    ),
    Promise(
        15,
        "a code created for a booking cancelled or moved meanwhile is deleted",
        (
            A + "test_provisioning.py::test_a_booking_cancelled_while_its_code_is_created_gets_the"
            "_new_code_removed",
            A + "test_provisioning.py::test_a_move_during_provisioning_and_late_removals_leave_the"
            "_replacement_code_alone",
        ),
    ),
    Promise(
        16,
        "a destructive job carries the state it expects and does nothing if it changed",
        (
            A + "test_provisioning.py::test_a_move_during_provisioning_and_late_removals_leave_the"
            "_replacement_code_alone",
            A + "test_access_properties.py::test_access_rules_hold_over_any_interleaving",
        ),
    ),
    Promise(
        17,
        "a disclosed booking's old slot stays closed until the provider confirms revocation",
        (
            E2E + "test_access.py::test_a_cancelled_disclosed_booking_keeps_its_slot_closed_until"
            "_the_code_is_removed",
            B + "test_moves.py::test_a_cancelled_slot_whose_pin_was_disclosed_stays_closed_until"
            "_revoked",
            A + "test_provisioning.py::test_a_moved_active_grant_is_revoked_only_when_the_provider"
            "_confirms_removal",
            A + "test_provisioning.py::test_a_removal_the_provider_never_confirms_is_an_incident"
            "_and_the_grant_stays_pending",
        ),
    ),
    Promise(
        18,
        "the PIN is encrypted at rest, erased after revocation, apart from the provider's id",
        (
            A + "test_pins.py::test_the_pin_is_not_readable_from_the_database_without_its_key",
            A + "test_pins.py::test_the_pin_survives_a_key_rotation_and_is_resealed_under_the_new"
            "_key",
            A + "test_pins.py::test_the_pin_is_gone_after_revocation_and_never_in_a_log_line_or_an"
            "_event",
            "tests/observability/test_logs.py::test_a_journeys_log_lines_are_json_carry_its_trace"
            "_and_hold_no_pin_secret_or_address",
        ),
    ),
    Promise(
        19,
        "every effect is an outbox row; at least once, idempotent consumers, nothing lost",
        (
            F + "test_faults.py::test_relay_killed_after_the_broker_ack_but_before_marking_applies"
            "_the_effect_once",
            F + "test_faults.py::test_rows_written_while_the_broker_is_down_are_all_delivered_when"
            "_it_is_back",
            F + "test_inbox.py::test_the_same_kafka_message_delivered_ten_times_changes_nothing"
            "_after_the_first",
            FAULTS + "test_killed_during_a_burst.py::test_services_killed_during_a_burst_serve_in"
            "_3_s_and_confirm_every_paid_booking_once",
            E2E + "test_database_outage.py::test_payments_made_while_the_database_is_down_confirm"
            "_their_bookings_once_it_is_back",
            SOAK + "test_the_two_minute_soak_injects_every_fault_kind_and_breaks_no_promise",
        ),
    ),
    Promise(
        20,
        "retries are bounded; failures become visible rows or incidents; deliberate replay",
        (
            F + "test_relay.py::test_a_row_the_broker_refuses_is_retried_then_marked_failed_not"
            "_retried_forever",
            F + "test_relay.py::test_a_poison_message_is_parked_later_ones_flow_and_a_replay"
            "_delivers_it_once",
            F + "test_inbox.py::test_a_conflict_that_never_clears_is_parked_after_the_bound_not"
            "_retried_for_ever",
            F + "test_timers_and_config.py::test_a_timer_that_uses_up_its_attempts_opens_an"
            "_incident",
            OPS + "test_booking_side.py::test_a_failed_effect_is_listed_replayed_under_a_new"
            "_generation_audited_and_dispatched",
            OPS + "test_payment_side.py::test_an_incident_is_resolved_by_its_id_once_with_one"
            "_audit_row",
            GW + "test_operations.py::test_a_failed_effect_is_listed_replayed_under_a_new"
            "_generation_and_audited",
            GW + "test_operations.py::test_an_incident_is_shown_on_the_timeline_resolved_once"
            "_and_audited",
        ),
    ),
    Promise(
        21,
        "an e-mail has a stable key and a durable status; a time-out is unknown",
        (
            N + "test_delivery_once.py::test_every_event_delivered_ten_times_in_any_order_yields"
            "_each_mail_once",
            N + "test_unknown_outcome.py::test_a_drop_after_data_is_unknown_and_nothing_more_is"
            "_sent_until_marked_sent",
            N + "test_unknown_outcome.py::test_a_delivery_a_stopped_process_left_sending_becomes"
            "_unknown_and_is_not_sent",
            N + "test_pin_secrecy.py::test_one_access_mail_per_grant_and_a_new_one_for_a_moved"
            "_bookings_new_grant",
        ),
    ),
    Promise(
        22,
        "operations can answer, for any booking, who owns the truth and what is pending",
        (
            A + "test_drift.py::test_a_code_left_at_the_provider_for_a_revoked_grant_is_removed",
            A + "test_drift.py::test_a_code_named_like_ours_that_nobody_here_knows_waits_for_a"
            "_human",
            A + "test_drift.py::test_an_active_grant_whose_code_vanished_gets_a_new_code",
            A + "test_drift.py::test_a_plan_that_missed_its_activation_is_activated",
            A + "test_drift.py::test_a_revocation_pending_too_long_is_removed_again",
            OPS + "test_booking_side.py::test_describe_booking_shows_its_state_slot_hold_timer"
            "_and_stored_trace",
            OPS + "test_payment_side.py::test_describe_booking_shows_its_payment_ids_and_the"
            "_trace_its_request_came_in",
            OPS + "test_access_side.py::test_describe_booking_shows_the_live_grant_its_provision"
            "_and_the_booking_trace",
            OPS + "test_notify_side.py::test_describe_booking_summarises_its_deliveries_and_shows"
            "_the_booking_trace",
            OPS + "test_access_side.py::test_drift_findings_are_the_drift_checks_stored_findings",
            GW + "test_journey.py::test_a_member_books_by_card_pays_gets_a_pin_cancels_is"
            "_refunded_and_books_by_pass",
            GW + "test_operations.py::test_a_failed_refund_is_a_drift_finding_explained_in_words",
        ),
    ),
    Promise(
        23,
        "one trace follows a booking across gateway, services, outbox, broker, consumers",
        (
            E2E + "test_walking_skeleton.py::test_one_trace_follows_the_checkout_from_the_grpc"
            "_call_to_the_payment_consumer",
            GW + "test_journey.py::test_a_member_books_by_card_pays_gets_a_pin_cancels_is"
            "_refunded_and_books_by_pass",
            OBS + "test_trace.py::test_a_booking_made_paid_activated_and_mailed_is_one_trace_in"
            "_jaeger",
        ),
    ),
)
