"""Helpers of scripts/vs_dpdk_instructions.py (instructions per packet against DPDK)."""
