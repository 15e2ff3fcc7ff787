"""The run store's tables (DuckDB). One database file per run; a catalog reads them all.

Why one file per run: DuckDB lets one process write a database file at a time. A sweep runs one job per
configuration, possibly in parallel processes or on several machines sharing a results folder, so each job writes
only its own file (``<results>/store/<run_id>.duckdb``) and nothing is ever written by two processes. Reports
attach every file read-only and query the union.

A run is identified by its *config hash* (``run_id``): re-invoking the same configuration reopens the same file
and skips the (question, run) units already done. Each finished question is committed in one transaction, so a
killed process loses at most the question in flight.
"""

from __future__ import annotations

#: 3: snapshots are stored zlib-compressed (``snapshot_zlib``); files of 2 keep their text snapshots readable.
SCHEMA_VERSION = 3

TABLES: dict[str, str] = {
    "meta": """
        CREATE TABLE IF NOT EXISTS meta (
            key VARCHAR PRIMARY KEY,
            value VARCHAR
        )""",
    "runs": """
        CREATE TABLE IF NOT EXISTS runs (
            run_id VARCHAR PRIMARY KEY,        -- the config hash
            label VARCHAR,                     -- short human name of the variant (e.g. "prompt=legacy")
            experiment VARCHAR,
            created_at TIMESTAMP,
            config_json VARCHAR,               -- the full resolved config (canonical JSON)
            memory_key VARCHAR,                -- identity of the memory build (shared by answer-only variants)
            prompt_hashes VARCHAR,             -- JSON {name: hash}
            dataset_name VARCHAR,
            dataset_path VARCHAR,
            dataset_sha256 VARCHAR,
            dataset_subset VARCHAR,
            n_questions INTEGER,
            git_sha VARCHAR,
            git_dirty BOOLEAN,
            packages VARCHAR,                  -- JSON {package: version}
            observer_model VARCHAR,
            reflector_model VARCHAR,
            actor_model VARCHAR,
            judge_model VARCHAR,
            judge_mode VARCHAR,                -- official | house
            judge_identity VARCHAR,            -- JSON, the judge's cache scope
            official BOOLEAN,                  -- pinned official templates, parse and judge model
            token_estimator VARCHAR,
            updated_at TIMESTAMP,              -- the latest invocation that registered this run
            registrations VARCHAR,             -- JSON list, one per invocation: {at, git_sha, git_dirty, packages}
            benchmark VARCHAR,                 -- longmemeval | locomo (NULL: stored before it was kept; longmemeval)
            memory_system VARCHAR,             -- om | full_context | oracle | simple_om | ... (NULL: stored before)
            memory_budget VARCHAR              -- JSON: the actor's context budget (top_k, context_tokens...)
        )""",
    "items": """
        CREATE TABLE IF NOT EXISTS items (
            run_id VARCHAR,
            question_id VARCHAR,
            question_type VARCHAR,
            is_abstention BOOLEAN,
            status VARCHAR,                    -- done | error
            hypothesis VARCHAR,
            label BOOLEAN,                     -- NULL when not judged
            judge_status VARCHAR,              -- ok | error | not_run
            judge_reply VARCHAR,
            error VARCHAR,
            memory_key VARCHAR,
            reused_memory BOOLEAN,
            observer_calls INTEGER,
            reflector_calls INTEGER,
            observations INTEGER,
            reflections INTEGER,
            history_tokens INTEGER,
            observation_tokens INTEGER,        -- at answer time
            pending_tokens INTEGER,            -- unobserved tail at answer time
            compression_ratio DOUBLE,          -- history tokens / observation tokens
            observation_cycles INTEGER,        -- times observation ran (each may batch several Observer calls)
            observed_message_tokens INTEGER,   -- message tokens given to the Observer, over all its calls
            raw_tail_tokens INTEGER,           -- tokens of raw unobserved messages the actor was shown
            actor_prompt_tokens INTEGER,
            actor_completion_tokens INTEGER,
            cost_usd DOUBLE,                   -- known spend of this question's calls
            unknown_cost_calls INTEGER,
            finished_at TIMESTAMP,
            actor_prompt_hash VARCHAR,         -- hash of the rendered actor prompt
            question VARCHAR,                  -- the question text, as asked
            gold_answer VARCHAR,               -- the reference answer (text)
            question_date VARCHAR,             -- in the LongMemEval format
            actor_prompt BLOB,                 -- zlib-compressed JSON of the messages the actor saw
            evidence VARCHAR,                  -- JSON list: where each evidence turn went (bench.trace)
            haystack_id VARCHAR,               -- the memory owner when questions share one (LoCoMo); NULL: own
            score DOUBLE,                      -- the benchmark's own score of the answer (LoCoMo F1); NULL: none
            corrected_answer VARCHAR,          -- the gold a known-errors list puts in its place (dataset.corrections)
            corrected_score DOUBLE,            -- the benchmark's score against corrected_answer
            corrected_label BOOLEAN,           -- the judge's verdict against corrected_answer
            tool_calls INTEGER,                -- retrieval mode: recall calls the actor made; NULL: it had no tool
            recall_steps VARCHAR,              -- JSON list of those calls (bench.tool_loop.ToolStep)
            context_tokens INTEGER,            -- tokens of the memory the actor was shown (the run's tokenizer)
            retrieval VARCHAR,                 -- JSON: a retrieval system's ranking and its recall@k (bench.seam)
            turns VARCHAR,                     -- JSON: per user turn, what an agent would send (bench.turn_costs)
            detail VARCHAR,                    -- JSON: the memory system's own figures for the answer (bench.seam)
            PRIMARY KEY (run_id, question_id)
        )""",
    "judgments": """
        CREATE TABLE IF NOT EXISTS judgments (
            run_id VARCHAR,
            question_id VARCHAR,
            judge_key VARCHAR,                 -- short hash of judge_identity: one judge, one key
            judge_mode VARCHAR,                -- official | house
            judge_model VARCHAR,
            judge_identity VARCHAR,            -- JSON, the judge's cache scope
            official BOOLEAN,
            hypothesis_hash VARCHAR,           -- which answer was graded (sha256 of the hypothesis)
            label BOOLEAN,                     -- NULL unless status is ok
            status VARCHAR,                    -- ok | error
            reply VARCHAR,
            error VARCHAR,
            judged_at TIMESTAMP,
            PRIMARY KEY (run_id, question_id, judge_key)
        )""",
    "probe_verdicts": """
        CREATE TABLE IF NOT EXISTS probe_verdicts (
            run_id VARCHAR,
            question_id VARCHAR,
            judge_key VARCHAR,                 -- as in judgments
            judge_mode VARCHAR,
            judge_model VARCHAR,
            judge_identity VARCHAR,
            probe VARCHAR,                     -- gold | vague | wrong (bench.probes)
            probe_text VARCHAR,                -- the answer the judge was shown
            expected BOOLEAN,                  -- the verdict a sound judge gives it
            label BOOLEAN,                     -- NULL unless status is ok
            status VARCHAR,                    -- ok | error
            reply VARCHAR,
            error VARCHAR,
            judged_at TIMESTAMP,
            PRIMARY KEY (run_id, question_id, judge_key, probe)
        )""",
    "memory_snapshots": """
        CREATE TABLE IF NOT EXISTS memory_snapshots (
            memory_key VARCHAR,
            question_id VARCHAR,
            snapshot VARCHAR,                  -- JSON of the system's snapshot, as text (rows of schema 2)
            stats VARCHAR,                     -- JSON of ReplayStats
            created_at TIMESTAMP,
            snapshot_zlib BLOB,                -- the same JSON zlib-compressed (schema 3 on; snapshot is then NULL)
            PRIMARY KEY (memory_key, question_id)
        )""",
    "om_events": """
        CREATE TABLE IF NOT EXISTS om_events (
            memory_key VARCHAR,
            question_id VARCHAR,
            seq INTEGER,
            kind VARCHAR,                      -- observation | reflection | reflection_unproductive | ...
            "at" TIMESTAMP,                    -- quoted: AT is a reserved word in DuckDB 2
            generation INTEGER,
            thread_count INTEGER,
            message_tokens INTEGER,
            observation_tokens_before INTEGER,
            observation_tokens_after INTEGER,
            level INTEGER,
            levels VARCHAR,                    -- JSON list of the ladder's levels
            calls INTEGER,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            detail VARCHAR,
            record_id VARCHAR,                 -- the OM record (thread or resource) the event concerns
            PRIMARY KEY (memory_key, question_id, seq)
        )""",
    "llm_calls": """
        CREATE TABLE IF NOT EXISTS llm_calls (
            run_id VARCHAR,
            question_id VARCHAR,
            seq INTEGER,
            stage VARCHAR,                     -- observer | reflector | actor | judge
            model VARCHAR,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cached BOOLEAN,
            latency_s DOUBLE,
            retries INTEGER,
            cost_usd DOUBLE,                   -- NULL = unknown price
            saved_usd DOUBLE,
            error VARCHAR,
            cache_key VARCHAR,
            started_at DOUBLE,
            cached_prompt_tokens INTEGER,      -- of prompt_tokens, from the provider's prompt cache; NULL: not said
            cache_write_tokens INTEGER,        -- of prompt_tokens, written to the provider's prompt cache
            PRIMARY KEY (run_id, question_id, seq)
        )""",
}
