"""libhns: the Host Networking Service over ctypes (HCN "V2" and HNSCall "V1"), with a simulator."""
