"""Drive cua's MCP tool server with the official Python MCP SDK (a client we did not write).

Two modes, each printing one JSON report on stdout and exiting 0 only when every check holds:

  stdio: start the server command given after `--` (`cua mcp ...`) as a child process and
         check the tool list, a read, a business outcome, and the refusal of an irreversible capability called
         without a plan approval.
  cancel: start the server the same way, cancel a read at its first progress notification,
         and check the session still answers (the Rust test reads the run's evidence).
  list-changed: start the server the same way, move the read tool's approval (--approval)
         away and back, and check each change is announced and the list follows.
  http:  connect to a running `cua serve` at --url, presenting the bearer token in the
         CUA_SERVE_TOKEN environment variable (never on the command line, where other users
         could read it), and make one read call.

tests/it/mcp.rs runs this with the MemberDesk fixture up and a catalog where the savings-balance
and transfer-funds capabilities are approved, and then checks the fixture: nothing moved.
"""

import argparse
import asyncio
import json
import os
import sys
import traceback

import anyio
import httpx2
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SAVINGS = "corebank_member_savings_balance"
TRANSFER = "corebank_member_transfer_funds"
TRANSFER_PLAN = "corebank_member_transfer_funds__plan"
CALL_TIMEOUT_SECONDS = 180

SAVINGS_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "member_id": {
            "type": "string",
            "description": "The member number as printed on the member's statement.",
            "pattern": "^[0-9]{4,10}$",
            "examples": ["12345"],
        }
    },
    "required": ["member_id"],
    "additionalProperties": False,
}


class Checks:
    """Every check, in order, with what was seen when it failed."""

    def __init__(self):
        self.results = []

    def check(self, name, ok, seen=None):
        entry = {"check": name, "ok": bool(ok)}
        if not ok:
            entry["seen"] = seen
        self.results.append(entry)
        return ok

    @property
    def ok(self):
        return bool(self.results) and all(result["ok"] for result in self.results)


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def call(session, name, arguments):
    return await session.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT_SECONDS)


async def check_tool_list(session, checks):
    listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    checks.check(
        "exactly the approved capabilities are tools, the irreversible one with its plan tool",
        sorted(tools) == sorted([SAVINGS, TRANSFER, TRANSFER_PLAN]),
        sorted(tools),
    )
    checks.check(
        "unapproved capabilities are not listed",
        "corebank_member_open_subaccount" not in tools and "corebank_auth_sign_on" not in tools,
        sorted(tools),
    )
    savings = tools.get(SAVINGS)
    if savings is None:
        return
    checks.check("the read capability's input schema", savings.input_schema == SAVINGS_INPUT_SCHEMA, savings.input_schema)
    annotations = savings.annotations
    checks.check(
        "the read capability is annotated read-only and not destructive",
        annotations is not None and annotations.read_only_hint is True and annotations.destructive_hint is False,
        annotations and annotations.model_dump(),
    )
    outcome_codes = (
        (savings.output_schema or {}).get("properties", {}).get("outcome", {}).get("properties", {}).get("code", {}).get("enum")
    )
    checks.check(
        "the output schema names the business outcomes",
        outcome_codes == ["member_not_found", "no_savings_account", "permission_denied"],
        outcome_codes,
    )
    checks.check(
        "the description tells the agent about member_not_found",
        "member_not_found: No member exists with that number." in (savings.description or ""),
        savings.description,
    )
    transfer = tools.get(TRANSFER)
    if transfer is not None:
        checks.check(
            "the irreversible capability is annotated destructive and requires an approval token",
            transfer.annotations is not None
            and transfer.annotations.destructive_hint is True
            and transfer.annotations.read_only_hint is False
            and "approval_token" in transfer.input_schema.get("required", []),
            {"annotations": transfer.annotations and transfer.annotations.model_dump(), "schema": transfer.input_schema},
        )
    plan = tools.get(TRANSFER_PLAN)
    if plan is not None:
        checks.check(
            "its plan tool is read-only",
            plan.annotations is not None and plan.annotations.read_only_hint is True,
            plan.annotations and plan.annotations.model_dump(),
        )


async def check_read(session, checks):
    progress = []

    async def heard(done, total, message):
        progress.append({"progress": done, "total": total, "message": message})

    result = await session.call_tool(
        SAVINGS, {"member_id": "12345"}, read_timeout_seconds=CALL_TIMEOUT_SECONDS, progress_callback=heard
    )
    checks.check(
        "progress is notified step by step during the call, always increasing",
        len(progress) >= 3
        and all(later["progress"] > earlier["progress"] for earlier, later in zip(progress, progress[1:]))
        and all("step(s) done" in (entry["message"] or "") for entry in progress),
        progress,
    )
    content = result.structured_content or {}
    outputs = content.get("outputs", {})
    checks.check(
        "savings balance of 12345 is 4210.55",
        not result.is_error
        and content.get("status") == "success"
        and outputs.get("savings_balance") == "4210.55"
        and outputs.get("account_status") == "Active",
        {"is_error": result.is_error, "structured": content, "text": text_of(result)},
    )
    checks.check("a run leaves evidence", bool(content.get("run", {}).get("evidence")), content.get("run"))


async def check_business_outcome(session, checks):
    result = await call(session, SAVINGS, {"member_id": "99999"})
    content = result.structured_content or {}
    checks.check(
        "member 99999 is the business outcome member_not_found, not an error",
        not result.is_error
        and content.get("status") == "business_outcome"
        and content.get("outcome", {}).get("code") == "member_not_found",
        {"is_error": result.is_error, "structured": content, "text": text_of(result)},
    )


async def check_refusals(session, checks):
    result = await call(
        session,
        TRANSFER,
        {"member_id": "12345", "from_account": "S-12345-01", "to_account": "C-12345-02", "amount": "100.00"},
    )
    content = result.structured_content or {}
    error = content.get("error", {})
    checks.check(
        "a transfer without a plan approval is a tool error that says why",
        result.is_error
        and error.get("code") == "plan_approval_required"
        and "irreversible" in error.get("message", "")
        and TRANSFER_PLAN in text_of(result),
        {"is_error": result.is_error, "structured": content, "text": text_of(result)},
    )
    result = await call(session, SAVINGS, {"member_id": "12a45"})
    checks.check(
        "malformed inputs are refused before anything runs",
        result.is_error and (result.structured_content or {}).get("error", {}).get("code") == "input_validation_failed",
        {"is_error": result.is_error, "structured": result.structured_content},
    )
    try:
        await call(session, "no_such_tool", {})
        checks.check("an unknown tool is a protocol error", False, "the call returned")
    except MCPError as error:
        checks.check("an unknown tool is a protocol error", "unknown tool" in str(error), str(error))


async def run_stdio(command, cwd, checks):
    async with stdio_client(stdio_parameters(command, cwd)) as (read, write):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            checks.check("the server says it is cua", initialized.server_info.name == "cua", initialized.server_info.name)
            await check_tool_list(session, checks)
            await check_read(session, checks)
            await check_business_outcome(session, checks)
            await check_refusals(session, checks)


def stdio_parameters(command, cwd):
    environment = {key: value for key, value in os.environ.items() if key.startswith("CUA_") or key == "NO_COLOR"}
    return StdioServerParameters(command=command[0], args=command[1:], env=environment, cwd=cwd)


async def run_cancel(command, cwd, checks):
    """Call the read tool and cancel the call at its first progress notification: the SDK sends
    `notifications/cancelled`, and the server stops the run before its next dispatch (the Rust
    test reads the run's evidence)."""
    async with stdio_client(stdio_parameters(command, cwd)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            heard = anyio.Event()
            outcome = {}

            async def on_progress(done, total, message):
                heard.set()

            async def the_call():
                try:
                    outcome["result"] = await session.call_tool(
                        SAVINGS,
                        {"member_id": "12345"},
                        read_timeout_seconds=CALL_TIMEOUT_SECONDS,
                        progress_callback=on_progress,
                    )
                except anyio.get_cancelled_exc_class():
                    outcome["cancelled"] = True
                    raise

            async with anyio.create_task_group() as group:
                group.start_soon(the_call)
                with anyio.fail_after(CALL_TIMEOUT_SECONDS):
                    await heard.wait()
                group.cancel_scope.cancel()
            checks.check("the call was cancelled after its first progress", outcome.get("cancelled") and "result" not in outcome, outcome)
            # The session goes on: the server still answers.
            listed = await session.list_tools()
            checks.check("the session still answers after a cancellation", SAVINGS in [tool.name for tool in listed.tools])


async def run_list_changed(command, cwd, approval, checks):
    """Revoke the read tool's approval by moving its file away, then restore it: each time the
    server says `notifications/tools/list_changed`, and the list follows."""
    changes = []
    changed = anyio.Event()

    async def on_message(message):
        nonlocal changed
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changes.append(message.method)
            changed.set()

    async with stdio_client(stdio_parameters(command, cwd)) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            before = [tool.name for tool in (await session.list_tools()).tools]
            checks.check("the read tool is listed while approved", SAVINGS in before, before)
            aside = approval + ".aside"
            os.rename(approval, aside)
            try:
                with anyio.fail_after(30):
                    await changed.wait()
                revoked = [tool.name for tool in (await session.list_tools()).tools]
                checks.check("a revoked approval is announced and the tool leaves the list", SAVINGS not in revoked, revoked)
            finally:
                changed = anyio.Event()
                os.rename(aside, approval)
            with anyio.fail_after(30):
                await changed.wait()
            after = [tool.name for tool in (await session.list_tools()).tools]
            checks.check("a restored approval is announced and the tool is back", SAVINGS in after, after)
            checks.check("one notification per change", len(changes) == 2, changes)


async def run_http(url, checks):
    token = os.environ.get("CUA_SERVE_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(30, read=CALL_TIMEOUT_SECONDS)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http_client:
        await run_http_session(url, http_client, checks)


async def run_http_session(url, http_client, checks):
    async with streamable_http_client(url, http_client=http_client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            checks.check("the HTTP server lists the read tool", SAVINGS in [tool.name for tool in listed.tools])
            await check_read(session, checks)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["stdio", "http", "cancel", "list-changed"])
    parser.add_argument("--approval", help="list-changed: the read tool's approval file")
    parser.add_argument("--url", help="http: the server's /mcp URL")
    parser.add_argument("--cwd", help="stdio: the directory to start the server in")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    checks = Checks()
    try:
        if args.mode in ("stdio", "cancel", "list-changed") and not command:
            parser.error(f"{args.mode} needs the server command after --")
        if args.mode == "stdio":
            asyncio.run(run_stdio(command, args.cwd, checks))
        elif args.mode == "cancel":
            asyncio.run(run_cancel(command, args.cwd, checks))
        elif args.mode == "list-changed":
            if not args.approval:
                parser.error("list-changed needs --approval")
            asyncio.run(run_list_changed(command, args.cwd, args.approval, checks))
        else:
            if not args.url:
                parser.error("http needs --url")
            asyncio.run(run_http(args.url, checks))
    except Exception:  # noqa: BLE001 - the report says what broke
        checks.check("the session ran to the end", False, traceback.format_exc())
    print(json.dumps({"mode": args.mode, "ok": checks.ok, "checks": checks.results}, indent=2))
    return 0 if checks.ok else 1


if __name__ == "__main__":
    sys.exit(main())
