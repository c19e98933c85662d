"""The `doctor` subcommand: this machine, the libraries, and what the calibration chose."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import Any

from memory_console.commands import common
from memory_console.embed import calibration, model_cache, verified
from memory_console.embed.calibration import CALIBRATE_ENV
from memory_console.embed.embedder import Embedder, ModelError, read_manifest
from memory_console.literal import visible
from memory_console.store.vector_file import state


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = subparsers.add_parser(
        "doctor",
        description="Show the CPU model and vector extensions, the library versions, the "
        "cache directory, which embedder graph and index scan the calibration chose with "
        "every candidate's measured figures, the model files' check and, with --db, the "
        "state of the store's vector index file. Exit 1 when the model cannot be used.",
        epilog=common.examples("doctor", "doctor --json", "doctor --recalibrate --db memories.db"),
    )
    common.add_common(doctor)
    doctor.add_argument(
        "--recalibrate",
        action="store_true",
        help="measure the candidate kernels again (a few seconds) and keep the new choice",
    )
    doctor.add_argument("--model-manifest", help="another embedder's manifest.json")
    doctor.set_defaults(handler=cmd_doctor)


def diagnose(args: argparse.Namespace) -> dict[str, Any]:
    """Everything doctor reports, as JSON-ready values."""

    report: dict[str, Any] = {
        "cpu": {
            "model": calibration.cpu_model(),
            "flags": calibration.cpu_flags(),
            "cores": os.cpu_count() or 1,
        },
        "python": platform.python_version(),
        "libraries": calibration.library_versions(),
        "cache_dir": str(model_cache.cache_dir()),
        "calibration_file": str(calibration.path()),
    }
    model: dict[str, Any] = {"ok": False}
    report["model"] = model
    try:
        manifest = read_manifest(args.model_manifest)
        model.update(manifest=str(manifest.path), model_id=manifest.model_id)
        # Whether each file's hash comes from the record, before the load checks them.
        files = []
        for file in manifest.files:
            known = None
            if file.path.is_file():
                known = verified.recorded(file.path.resolve(), file.path.resolve().stat())
            files.append(
                {
                    "role": file.role,
                    "path": str(file.path),
                    "size": file.size,
                    "check": "unchanged since its hash was verified" if known else "hashed now",
                }
            )
        model["files"] = files
        embedder = Embedder.load(args.model_manifest, recalibrate=args.recalibrate)
    except ModelError as error:
        model["error"] = str(error)
        return report
    model.update(ok=True, model_id=embedder.model_id, variant=embedder.variant)
    chosen = embedder.calibration
    if chosen is not None:
        report["calibration"] = {
            **chosen.as_json(),
            "why": why(chosen),
            "int8_scan_from": None
            if chosen.int8_scan_from == calibration.NEVER
            else chosen.int8_scan_from,
        }
    db = getattr(args, "db", None)
    if db:
        store = common.open_store(args)
        try:
            report["vector_file"] = state(store, embedder.model_id, embedder.dim)
        finally:
            store.close()
    return report


def why(chosen: calibration.Calibration) -> str:
    """One sentence: measured when and in how long, or why nothing was measured."""

    if not chosen.measured:
        return f"{CALIBRATE_ENV}=0: the defaults, nothing measured"
    return (
        f"the fastest candidates measured on this machine at {chosen.measured_at} "
        f"(in {chosen.seconds:.1f} s); measured again when the CPU, a library or the model "
        "changes, or with --recalibrate"
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    report = diagnose(args)
    if args.json:
        common.print_json(report)
    else:
        print_report(report)
    if not report["model"]["ok"]:
        # A path given on the command line may hold control characters: one escaped line.
        error = visible(report["model"]["error"], layout=False)
        print(f"memory-console: error: {error}", file=sys.stderr)
        return 1
    return 0


def print_report(report: dict[str, Any]) -> None:
    cpu = report["cpu"]
    flags = " ".join(cpu["flags"]) or "none of avx2, avx512f, avx512_vnni, avx_vnni, amx"
    print(f"cpu          {cpu['model']}, {cpu['cores']} cores ({flags})")
    libraries = ", ".join(f"{name} {version}" for name, version in report["libraries"].items())
    print(f"libraries    python {report['python']}, {libraries}")
    print(f"cache        {report['cache_dir']}")
    model = report["model"]
    print(f"model        {model.get('model_id', '?')} ({model.get('manifest', 'no manifest')})")
    for file in model.get("files", []):
        print(f"  {file['role']:<10} {file['path']} ({file['size']:,} bytes): {file['check']}")
    if not model["ok"]:
        print(f"  PROBLEM    {visible(model['error'], layout=False)}")
        return
    chosen = report.get("calibration")
    if chosen is not None:
        print(f"embedder     {chosen['embedder']} ({model['model_id']})")
        for figure in chosen["embedder_figures"]:
            print("  " + figure_line(figure, chosen["embedder"]))
        print(f"index scan   {chosen['index']}")
        for figure in chosen["index_figures"]:
            print("  " + figure_line(figure, chosen["index"]))
        print(f"why          {chosen['why']}")
        print(f"kept in      {report['calibration_file']}")
    vector_file = report.get("vector_file")
    if vector_file is not None:
        line = f"vector file  {vector_file['state']}: {vector_file['path']}"
        if vector_file["state"] == "current":
            line += (
                f" ({vector_file['rows']:,} rows of {vector_file['model_id']}, "
                f"{vector_file['changed_since']:,} changed since written)"
            )
        elif "why" in vector_file:
            line += f" ({vector_file['why']})"
        print(line)


def figure_line(figure: dict[str, Any], chosen: str) -> str:
    """One candidate: its speed, its measured drift from the reference (embedders) and why
    it was refused, if it was."""
    mark = "chosen" if figure["name"] == chosen else "      "
    text = f"{mark} {figure['name']:<20} {figure['speed']:>9,.2f} {figure['unit']}"
    if figure["unit"] == "texts/s":
        text += (
            f"  drift {figure.get('cosine_difference', 0.0):.1e},"
            f" batch {figure.get('batch_difference', 0.0):.1e}"
        )
    if figure["refused"]:
        text += f"  refused: {figure['refused']}"
    return text
