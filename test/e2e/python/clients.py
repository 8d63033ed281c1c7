"""Drives skill-mcp with the Python clients people use: FastMCP 4.0's skill utilities and the MCP
Python SDK 2.3's Client. Run by test/e2e/python-clients.test.ts with the venv .ci/run makes; it
prints one JSON object on stdout and the test compares it (and the files written) with the disk.

  clients.py fastmcp OUT_DIR SERVER      download_skill of every listed skill into OUT_DIR/download,
                                         sync_skills into OUT_DIR/sync
  clients.py sdk MODE SERVER             tools, every resource of every listed skill, every prompt

SERVER is a Streamable HTTP URL, or `stdio` (the command is node dist/skill-mcp.js, its
environment this process's). MODE is `legacy` (initialize) or a pinned protocol version.
"""

import asyncio
import base64
import json
import os
import sys


def server_params(server: str):
    if server != "stdio":
        return server
    from mcp import StdioServerParameters

    here = os.path.dirname(os.path.abspath(__file__))
    bin_js = os.path.join(here, "..", "..", "..", "dist", "skill-mcp.js")
    return StdioServerParameters(command=os.environ["NODE"], args=[bin_js], env=dict(os.environ))


async def fastmcp_mode(out_dir: str, server: str) -> dict:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from fastmcp.utilities.skills import download_skill, get_skill_manifest, list_skills, sync_skills

    if server == "stdio":
        params = server_params(server)
        transport = StdioTransport(command=params.command, args=params.args, env=params.env)
    else:
        transport = server
    async with Client(transport) as client:
        skills = await list_skills(client)
        manifests = {}
        downloaded = []
        for skill in skills:
            manifest = await get_skill_manifest(client, skill.name)
            manifests[skill.name] = [{"path": f.path, "size": f.size, "hash": f.hash} for f in manifest.files]
            path = await download_skill(client, skill.name, os.path.join(out_dir, "download"))
            downloaded.append(os.path.relpath(path, out_dir))
        synced = await sync_skills(client, os.path.join(out_dir, "sync"))
    return {
        "skills": [{"name": s.name, "description": s.description, "uri": s.uri} for s in skills],
        "manifests": manifests,
        "downloaded": downloaded,
        "synced": [os.path.relpath(p, out_dir) for p in synced],
    }


async def sdk_mode(mode: str, server: str) -> dict:
    from mcp import Client

    async with Client(server_params(server), mode=mode) as client:
        tools = await client.list_tools()
        resources = await client.list_resources()
        files = {}
        for resource in resources.resources:
            uri = str(resource.uri)
            manifest = await client.read_resource(uri.removesuffix("SKILL.md") + "_manifest")
            listing = json.loads(manifest.contents[0].text)
            for f in listing["files"]:
                result = await client.read_resource(uri.removesuffix("SKILL.md") + f["path"])
                content = result.contents[0]
                data = content.text.encode("utf-8") if hasattr(content, "text") else base64.b64decode(content.blob)
                files[f"{listing['skill']}/{f['path']}"] = base64.b64encode(data).decode("ascii")
        prompts = await client.list_prompts()
        bodies = {}
        for prompt in prompts.prompts:
            got = await client.get_prompt(prompt.name)
            bodies[prompt.name] = [m.content.text for m in got.messages]
        listed = await client.call_tool("skill_list", {})
        version = client.protocol_version
    return {
        "protocolVersion": version,
        "tools": sorted(t.name for t in tools.tools),
        "resources": [str(r.uri) for r in resources.resources],
        "files": files,
        "prompts": bodies,
        "skillListIsError": bool(listed.is_error),
        "skillListNames": [s["name"] for s in (listed.structured_content or {}).get("skills", [])],
    }


def main() -> None:
    kind, arg, server = sys.argv[1], sys.argv[2], sys.argv[3]
    result = asyncio.run(fastmcp_mode(arg, server) if kind == "fastmcp" else sdk_mode(arg, server))
    json.dump(result, sys.stdout)


main()
