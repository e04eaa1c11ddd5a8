"""The test tiers (docs/testing.md): every test is in exactly one, by its marker.

- `lint`: ruff, mypy, the import contracts, the documentation site and the wheel build, and the
  tier counts of docs/testing.md: the checks of the code and docs as text, no test of behaviour.
- `fast`: in-process, the developer's tier: no process of ours (hook, CLI, capture, daemon,
  servers), no real Claude Code CLI, browser, terminal, OpenTelemetry backend, pip/pipx/uv install
  or wheel build. git and other plain programs are allowed.
- `integration`: our own processes as they really run: hook processes, the background daemon
  and capture processes, the MCP hook server and web server, the installed CLI as a subprocess.
- `e2e`: what lies outside this checkout: the real Claude Code CLI (installed from npm), Arize
  Phoenix, chromium, tmux, pipx/uv installs, wheels built and installed into fresh venvs.

One place says it: a module's tier is `MODULES[its file name]`; a test of another tier than its
module's is named in `TESTS` (module -> tier -> test functions, all their parameters alike). A
module whose tests are all end-to-end may also say so itself (`pytestmark = pytest.mark.e2e`),
a test with `@pytest.mark.e2e`: a marker on the test or its module wins, and must then be its
only tier. tests/conftest.py applies this at collection (`assign`), refuses a test module named
nowhere, and fails a `fast` test that starts a process of ours or of the outside world
(`Guard`); tests/test_tiers.py checks the rest. The split was measured, not guessed: a run of
the whole suite noting every program each test started, then the fast tier under the guard.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

TIERS = ("lint", "fast", "integration", "e2e")

MODULES: dict[str, str] = {
    "test_agent_tree.py": "fast",
    "test_apply.py": "fast",
    "test_pure_answers.py": "fast",
    "test_papercuts.py": "integration",
    "test_unattributed.py": "integration",
    "test_first_minute.py": "integration",
    "test_errors_and_memories.py": "integration",
    "test_read_commands.py": "integration",
    "test_before_images.py": "integration",
    "test_capture_process.py": "integration",
    "test_checks_and_approaches.py": "integration",
    "test_claude_exit.py": "fast",
    "test_cli.py": "integration",
    "test_cli_docs.py": "fast",
    "test_demo_image.py": "lint",
    "test_cli_readable.py": "integration",
    "test_piped_output.py": "integration",
    "test_cli_storage_faults.py": "integration",
    "test_every_command_escaped.py": "fast",
    "test_configuration.py": "integration",
    "test_coordination.py": "integration",
    "test_cost_surfaces.py": "fast",
    "test_crash_loop.py": "integration",
    "test_daemon.py": "integration",
    "test_daily_use.py": "integration",
    "test_daily_use_332.py": "integration",
    "test_dead_end_cost.py": "integration",
    "test_docs.py": "fast",
    "test_docs_site.py": "fast",
    "test_doctor_scale.py": "integration",
    "test_doctor_busy.py": "integration",
    "test_doctor_runs_only_ours.py": "integration",
    "test_e2e_claude.py": "e2e",
    "test_e2e_skill_shell.py": "e2e",
    "test_e2e_cost.py": "e2e",
    "test_e2e_cost_history.py": "e2e",
    "test_e2e_ccusage.py": "e2e",
    "test_e2e_hostile_transcript.py": "e2e",
    "test_e2e_hostile_repository.py": "e2e",
    "test_e2e_first_day.py": "e2e",
    "test_hook_fields_cli.py": "e2e",
    "test_e2e_hooks_report.py": "e2e",
    "test_e2e_memory.py": "e2e",
    "test_e2e_memory_stale.py": "e2e",
    "test_e2e_otel.py": "e2e",
    "test_e2e_reconcile.py": "e2e",
    "test_e2e_timetravel.py": "e2e",
    "test_e2e_transport.py": "e2e",
    "test_e2e_truth.py": "e2e",
    "test_e2e_truth_histories.py": "e2e",
    "test_early_answer.py": "fast",
    "test_entry_points.py": "integration",
    "test_fault_cases_daemon_migration.py": "integration",
    "test_faults.py": "integration",
    "test_filesystems.py": "integration",
    "test_first_hour.py": "integration",
    "test_frame_addresses.py": "fast",
    "test_fuzz.py": "integration",
    "test_helper_usage.py": "fast",
    "test_hook_record.py": "fast",
    "test_mcp_hook_server.py": "integration",
    "test_new_fields_transports.py": "integration",
    "test_hooks.py": "integration",
    "test_hooks_untimed.py": "integration",
    "test_hostile_input.py": "integration",
    "test_hot_path.py": "integration",
    "test_injections.py": "integration",
    "test_install_paths.py": "e2e",
    "test_install_root.py": "integration",
    "test_judge.py": "integration",
    "test_judge_optin.py": "integration",
    "test_fork_remove.py": "integration",
    "test_ladder.py": "integration",
    "test_layers.py": "lint",
    "test_library.py": "integration",
    "test_library_writes.py": "fast",
    "test_output_switch.py": "fast",
    "test_lint.py": "lint",
    "test_listings.py": "fast",
    "test_memory.py": "integration",
    "test_memory_provenance.py": "integration",
    "test_memory_stale.py": "integration",
    "test_status_writes_nothing.py": "integration",
    "test_stale_count.py": "fast",
    "test_failed_last_at.py": "fast",
    "test_records_deferred.py": "fast",
    "test_memory_roundtrip.py": "integration",
    "test_migrations.py": "fast",
    "test_model_context.py": "integration",
    "test_model_switch.py": "integration",
    "test_no_scans.py": "fast",
    "test_group_commit.py": "fast",
    "test_statements_per_event.py": "fast",
    "test_original_schema.py": "integration",
    "test_otel_backend.py": "e2e",
    "test_otel_export.py": "fast",
    "test_otel_privacy.py": "fast",
    "test_outcomes.py": "fast",
    "test_payloads.py": "fast",
    "test_skill_shell_command.py": "fast",
    "test_hook_payload.py": "fast",
    "test_planted_links.py": "integration",
    "test_plugin.py": "e2e",
    "test_project_files.py": "integration",
    "test_prune.py": "integration",
    "test_reconcile.py": "fast",
    "test_redact.py": "fast",
    "test_relay.py": "integration",
    "test_request.py": "integration",
    "test_revert_agent.py": "integration",
    "test_revert_model.py": "integration",
    "test_revert_safety.py": "integration",
    "test_say_once.py": "integration",
    "test_secret_cuts.py": "fast",
    "test_secret_families.py": "integration",
    "test_secret_wrappings.py": "fast",
    "test_secrets.py": "integration",
    "test_security_map.py": "fast",
    "test_serve.py": "integration",
    "test_settings_files.py": "integration",
    "test_snapshot_secrets.py": "integration",
    "test_snapshot_store.py": "integration",
    "test_spool_poison.py": "integration",
    "test_staleness.py": "fast",
    "test_state_history.py": "integration",
    "test_status_otel.py": "fast",
    "test_statusline.py": "integration",
    "test_storage.py": "fast",
    "test_subagent_frames.py": "integration",
    "test_symlinked_project.py": "integration",
    "test_table_layout.py": "fast",
    "test_table_owners.py": "fast",
    "test_terminal_tables.py": "integration",
    "test_terminal_safety.py": "integration",
    "test_tiers.py": "fast",
    "test_timetravel.py": "integration",
    "test_truth_histories.py": "fast",
    "test_hook_runs.py": "fast",
    "test_transcript_values.py": "fast",
    "test_transcripts.py": "fast",
    "test_web_session_page.py": "fast",
    "test_cost_histories.py": "fast",
    "test_cost_surfaces_rule.py": "integration",
    "test_transport_install.py": "e2e",
    "test_trust.py": "integration",
    "test_provenance.py": "integration",
    "test_hostile_repository.py": "integration",
    "test_trust_surfaces.py": "integration",
    "test_types.py": "lint",
    "test_untrusted_sources.py": "integration",
    "test_usergit.py": "integration",
    "test_warm_start.py": "integration",
    "test_watch.py": "integration",
    "test_wheel_build.py": "lint",
    "test_wiring.py": "integration",
    "test_writelock.py": "fast",
    "test_workspace.py": "integration",
}


TESTS: dict[str, dict[str, tuple[str, ...]]] = {
    "test_apply.py": {
        "integration": ("test_in_process_replay_derives_what_the_hooks_derived",),
    },
    "test_before_images.py": {
        "fast": (
            "test_a_planted_link_for_the_folder_is_refused",
            "test_one_walk_gives_every_frame_what_the_rule_gives_it",
        ),
    },
    "test_cli.py": {
        "fast": ("test_every_command_has_help",),
    },
    "test_cost_surfaces.py": {
        "integration": (
            "test_agents_show_each_agents_own_tokens_and_cost",
            "test_timeline_gives_each_frame_the_responses_since_the_frame_before",
        ),
    },
    "test_docs_site.py": {
        "lint": ("test_the_site_builds_strictly",),
    },
    "test_cli_storage_faults.py": {
        "fast": ("test_every_command_on_a_corrupt_database_prints_one_line",),
    },
    "test_every_command_escaped.py": {
        "integration": ("test_no_command_that_takes_a_snapshot_prints_one_raw",),
    },
    "test_faults.py": {
        # not the derivation's bug: its `frames.commit` case starts the capture process
        "fast": ("test_a_bug_even_in_storing_the_event_alone_spools_it",),
    },
    "test_filesystems.py": {
        "fast": ("test_the_detector_reads_the_mount_table",),
    },
    "test_frame_addresses.py": {
        "integration": (
            "test_a_fork_of_a_hostile_session_id_lands_beside_the_project",
            "test_a_real_ambiguity_still_says_so",
            "test_an_all_digit_prefix_is_written_with_a_colon",
            "test_diff_of_two_frame_numbers_through_the_cli",
        ),
    },
    "test_helper_usage.py": {
        "integration": ("test_an_internal_helpers_transcript_that_never_existed_is_no_warning",),
    },
    "test_mcp_hook_server.py": {
        "fast": (
            "test_every_payload_of_the_recorded_streams_comes_back",
            "test_every_recorded_payload_comes_back_from_its_filled_in_input",
            "test_generated_payloads_of_known_fields_come_back_unchanged",
            "test_null_and_empty_fields_of_the_recordings_are_the_only_loss",
            "test_the_known_ambiguity_of_a_json_field_holding_a_string",
            "test_unknown_fields_and_other_arguments_are_not_part_of_the_payload",
        ),
    },
    "test_hooks.py": {
        "fast": ("test_every_installed_command_runs_the_in_package_entry",),
    },
    "test_install_paths.py": {
        "integration": (
            "test_install_refuses_a_command_that_would_record_nothing",
            "test_install_refuses_a_missing_entry",
        ),
    },
    "test_judge.py": {
        "fast": ("test_parse_reads_plain_json_and_claude_p_output",),
    },
    "test_ladder.py": {
        "fast": ("test_category_and_file_at_fault_on_real_error_texts",),
    },
    "test_listings.py": {
        "integration": (
            "test_every_listing_has_all_and_limit",
            "test_listings_page_by_default_and_stream_everything_with_all",
        ),
    },
    "test_memory_provenance.py": {
        "fast": ("test_migration_holds_earlier_agent_global_memories_for_review",),
    },
    "test_original_schema.py": {
        "fast": ("test_a_new_database_has_every_original_table_and_column",),
    },
    "test_otel_export.py": {
        "e2e": ("test_spans_over_grpc_reach_a_real_backend",),
        "integration": (
            "test_a_background_process_killed_and_started_again_sends_the_rest_once",
            "test_a_cloned_configuration_never_sends_anything",
            "test_export_otel_returns_by_its_deadline_from_a_dripping_backend",
            "test_export_otel_sends_history_on_demand_as_a_user_runs_it",
            "test_the_background_process_sends_a_recorded_session_and_status_shows_it",
        ),
    },
    "test_otel_privacy.py": {
        "integration": (
            "test_a_literal_header_secret_is_warned_about_and_the_file_is_0600",
            "test_an_endpoints_credentials_are_neither_stored_nor_shown",
            "test_with_content_off_no_recorded_content_reaches_any_span",
        ),
    },
    "test_payloads.py": {
        "integration": ("test_session_start_answer_matches_the_output_contract",),
    },
    "test_project_files.py": {
        "fast": ("test_runtime_files_live_in_the_per_user_state_keyed_by_the_root",),
    },
    "test_reconcile.py": {
        "integration": ("test_the_drop_switch_makes_chosen_events_exit_unrecorded",),
    },
    "test_relay.py": {
        "fast": ("test_threads_of_one_process_take_turns_on_its_writer_lock",),
    },
    "test_say_once.py": {
        "fast": (
            "test_held_lines_are_those_after_the_last_boundary_whatever_it_preserved",
            "test_restate_keeps_unchanged_lines_out_and_gives_changed_ones",
            "test_texts_are_escaped_as_claude_code_writes_them",
            "test_the_transcript_is_read_from_its_end_within_the_cap",
        ),
    },
    "test_secret_cuts.py": {
        "integration": (
            "test_no_cap_on_what_a_command_records_keeps_part_of_a_secret",
            "test_the_judge_command_is_stored_redacted",
        ),
    },
    "test_secret_families.py": {
        "fast": (
            "test_hostile_command_lines_take_linear_time",
            "test_options_naming_no_secret_keep_their_values",
        ),
    },
    "test_secret_wrappings.py": {
        "integration": ("test_wrapped_tokens_never_reach_the_database_through_the_hook",),
    },
    "test_secrets.py": {
        "fast": (
            "test_a_planted_secret_never_survives_whatever_surrounds_it",
            "test_clean_text_is_left_alone",
        ),
    },
    "test_serve.py": {
        "e2e": (
            "test_a_real_browser_follows_the_redirect_file_which_is_then_removed",
            "test_pages_show_controls_and_bidi_in_recorded_text_escaped",
            "test_session_and_diff_pages_in_a_real_browser",
        ),
    },
    "test_snapshot_store.py": {
        "fast": ("test_heal_needs_no_store",),
    },
    "test_state_history.py": {
        "fast": ("test_commands_are_classified_by_the_tool_they_run",),
    },
    "test_statusline.py": {
        "e2e": ("test_a_wheel_in_a_fresh_venv_installs_a_working_status_line",),
        "fast": (
            "test_the_copied_ladder_constants_are_still_the_ladders",
            "test_the_line_keeps_to_80_characters_dropping_details_first",
        ),
    },
    "test_tiers.py": {
        "lint": ("test_the_tier_table_of_docs_testing_md_counts_the_suite",),
    },
    "test_timetravel.py": {
        "fast": (
            "test_state_diff_names_what_was_added_removed_and_changed",
            "test_the_events_that_commit_frames_are_listed_once",
        ),
    },
    "test_transcript_values.py": {
        "integration": (
            "test_doctor_counts_the_lines_skipped_and_says_where_the_first_is",
            "test_status_cost_and_timeline_keep_working_as_a_user_runs_them",
        ),
    },
    "test_transcripts.py": {
        "integration": (
            "test_a_missing_transcript_is_information_for_an_old_session",
            "test_cost_and_status_read_on_demand",
            "test_cost_pages_the_newest_sessions_and_totals_every_one",
            "test_without_claude_codes_figure_the_price_table_is_used_and_said",
        ),
    },
    "test_transport_install.py": {
        "fast": ("test_policy_problem_reads_each_rule_of_the_managed_settings",),
        "integration": (
            "test_auto_with_a_claude_path_that_does_not_exist_falls_back_to_commands",
            "test_auto_with_a_claude_that_fails_falls_back_to_commands",
            "test_auto_without_claude_on_path_falls_back_to_commands_and_says_why",
            "test_mcp_without_a_claude_is_an_error_and_writes_nothing",
        ),
    },
    "test_trust_surfaces.py": {
        "fast": (
            "test_an_untrusted_databases_memories_are_exported_only_when_asked_and_marked",
            "test_every_answering_surface_is_tried_above",
            "test_every_message_builder_quotes_hostile_text_inert",
        ),
    },
    "test_watch.py": {
        "e2e": (
            "test_q_quits_and_gives_the_terminal_back",
            "test_watch_shows_agents_claims_and_errors_as_they_arrive",
        ),
    },
    "test_workspace.py": {
        "fast": ("test_a_planted_link_at_the_snapshot_folder_is_refused",),
    },
}

_BY_TEST = {
    f"{module}::{name}": tier
    for module, tiers in TESTS.items()
    for tier, names in tiers.items()
    for name in names
}


def _module_key(item: pytest.Item) -> str:
    return Path(str(item.path)).name


def _test_key(item: pytest.Item) -> str:
    function = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    cls = getattr(item, "cls", None)
    name = f"{cls.__name__}::{function}" if cls is not None else function
    return f"{_module_key(item)}::{name}"


def own_tiers(item: pytest.Item) -> list[str]:
    """The tier markers the test, its class or its module carry themselves, nearest first."""
    return [mark.name for mark in item.iter_markers() if mark.name in TIERS]


def tier_of(item: pytest.Item) -> str | None:
    own = own_tiers(item)
    if own:
        return own[0]
    return _BY_TEST.get(_test_key(item)) or MODULES.get(_module_key(item))


def assign(items: Iterable[pytest.Item]) -> None:
    """Mark each test with its tier; a test module in no tier, or a test with two, stops the
    run before any test runs."""
    unassigned: set[str] = set()
    double: list[str] = []
    for item in items:
        if len(set(own_tiers(item))) > 1:
            double.append(item.nodeid)
            continue
        tier = tier_of(item)
        if tier is None:
            unassigned.add(_module_key(item))
        elif not own_tiers(item):
            item.add_marker(getattr(pytest.mark, tier))
    problems = []
    if unassigned:
        names = ", ".join(sorted(unassigned))
        problems.append(f"no test tier for {names}: add each to MODULES in tests/tiers.py")
    if double:
        problems.append(f"tests with two tiers: {', '.join(double)}")
    if problems:
        raise pytest.UsageError("; ".join(problems))


GUARD = pytest.StashKey["Guard"]()  # a fast test's own, on its item


# --- a fast test starts no process of ours, nor of the outside world ----------------------------

OUTSIDE = {
    "claude",  # the real Claude Code CLI
    "node",
    "npm",
    "npx",
    "chromium",
    "chromium-browser",
    "tmux",
    "pipx",
    "uv",
    "ruff",
    "mypy",
    "lint-imports",
    "mkdocs",
}
# The installed command, as a program or in a shell line (not `.claude-session.db`).
OUR_COMMAND = re.compile(r"(?:^|[/\s'\"])claude-session(?:$|[\s'\"])")
PYTHON_MODULES = {"pip", "venv", "pytest", "mkdocs", "mypy", "phoenix"}


def refused(argv: Any) -> str | None:
    """Why a fast test may not start `argv`, or None."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        words = [os.fsdecode(argv)]
    else:
        words = [os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w) for w in argv]
    if not words:
        return None
    line = " ".join(words)
    if "claude_session" in line or OUR_COMMAND.search(line):
        return "a process of ours (hook, CLI, capture, daemon or server)"
    program = os.path.basename(words[0].split()[0]) if words[0].strip() else ""
    if program in OUTSIDE:
        return f"{program}, a program of the outside world"
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1].split(".")[0] in PYTHON_MODULES:
            return f"python -m {words[i + 1]}"
    return None


class Guard:
    """Installed around one fast test: notes every process it starts that a fast test may not
    (subprocess and os.posix_spawn both), without stopping it, for the test's end to report."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import subprocess
        import threading

        self.found: list[str] = []
        popen_init = subprocess.Popen.__init__
        posix_spawn = os.posix_spawn
        guard = self
        # subprocess itself starts programs with os.posix_spawn where it can (on Python 3.13,
        # with close_fds too): a start inside Popen is noted once, by Popen.
        inside_popen = threading.local()

        def init(self: Any, args: Any, *rest: Any, **kw: Any) -> None:
            guard.note(args)
            inside_popen.depth = getattr(inside_popen, "depth", 0) + 1
            try:
                popen_init(self, args, *rest, **kw)
            finally:
                inside_popen.depth -= 1

        def spawn(path: Any, argv: Any, *rest: Any, **kw: Any) -> int:
            if not getattr(inside_popen, "depth", 0):
                guard.note(argv)
            return posix_spawn(path, argv, *rest, **kw)

        monkeypatch.setattr(subprocess.Popen, "__init__", init)
        monkeypatch.setattr(os, "posix_spawn", spawn)

    def note(self, argv: Any) -> None:
        try:
            why = refused(argv)
        except Exception:  # never break the test's own call over a check
            why = None
        if why:
            shown = argv if isinstance(argv, str) else " ".join(map(str, argv))
            self.found.append(f"{why}: {shown[:200]}")
