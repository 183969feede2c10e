"""What each cloud's logs are called: the log types, components and categories gpudr turns on,
written once for the components that set them and the policy pack that checks them.

Standard library only: the Pulumi program and the policy pack read this module.
"""

from __future__ import annotations

from gpudr.core.enums import CLOUDWATCH_RETENTION_DAYS, cloudwatch_retention_days

# EKS: every control-plane log type (CIS Amazon EKS 2.1.1; Security Hub EKS.8 asks for audit).
EKS_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")

# GKE `logging_config.enable_components`: the control plane's components (CIS GKE 5.7.1), and
# WORKLOADS, which is GKE's default when no logging config is given: a deployed cluster keeps
# its workloads' logs.
GKE_CONTROL_PLANE_COMPONENTS = ("SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER")
GKE_LOG_COMPONENTS = (*GKE_CONTROL_PLANE_COMPONENTS, "WORKLOADS")

# Cloud Storage Data Access audit logs: object reads and writes.
GCS_AUDIT_SERVICE = "storage.googleapis.com"
GCS_DATA_ACCESS_TYPES = ("DATA_READ", "DATA_WRITE")

# Azure Storage diagnostic categories of the blob service: every read, write and delete.
BLOB_LOG_CATEGORIES = ("StorageRead", "StorageWrite", "StorageDelete")
# AKS diagnostic categories that hold the Kubernetes audit log (either is an audit trail).
AKS_AUDIT_CATEGORIES = ("kube-audit", "kube-audit-admin")
# The AKS monitoring add-on (Container Insights) and its config key naming the workspace.
AKS_MONITORING_ADDON = "omsagent"
AKS_MONITORING_WORKSPACE_KEY = "logAnalyticsWorkspaceResourceID"

# The retention periods CloudWatch Logs accepts, and the plan's retention rounded up to one:
# a closed set of vendor values, in core's enums so that the cost engine prices the same days.
__all__ = ["CLOUDWATCH_RETENTION_DAYS", "cloudwatch_retention_days"]
