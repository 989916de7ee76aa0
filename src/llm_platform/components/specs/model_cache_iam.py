"""The S3 policies of the model bucket: TLS only for the bucket, and per model a loader that writes only its
own prefix and a role (NVMe sync or vLLM pods) that reads only its own weights and compile cache.

Re-exported by `model_cache`, whose cache modes these policies serve.
"""

from __future__ import annotations

from typing import Any


def bucket_policy(bucket_arn: str) -> dict[str, Any]:
    """TLS only: deny every request made without it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def writer_policy(bucket_arn: str, prefix: str) -> dict[str, Any]:
    """One model's Hub-to-S3 loader: read and write under that model's prefix only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            *_read_statements(bucket_arn, prefix),
            {
                "Sid": "WriteModel",
                "Effect": "Allow",
                "Action": ["s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
                "Resource": f"{bucket_arn}/{prefix}/*",
            },
        ],
    }


def model_access_policy(
    bucket_arn: str, weights_prefix: str | None, compile_prefix: str | None
) -> dict[str, Any]:
    """One model's own role (its NVMe sync, or its vLLM pods): read its weights (when it reads them from S3);
    read and write its compile cache (model, vLLM image, GPU). Nothing of any other model."""
    statements = (
        _read_statements(bucket_arn, weights_prefix)
        if weights_prefix is not None
        else [_locate_bucket(bucket_arn)]
    )
    if compile_prefix is not None:
        statements += [
            {
                "Sid": "ListCompileCache",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": [f"{compile_prefix}/*", compile_prefix]}},
            },
            {
                "Sid": "ReadWriteCompileCache",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"],
                "Resource": f"{bucket_arn}/{compile_prefix}/*",
            },
        ]
    return {"Version": "2012-10-17", "Statement": statements}


def _locate_bucket(bucket_arn: str) -> dict[str, Any]:
    # GetBucketLocation never carries s3:prefix, so it cannot sit under the ListBucket condition
    return {
        "Sid": "LocateBucket",
        "Effect": "Allow",
        "Action": "s3:GetBucketLocation",
        "Resource": bucket_arn,
    }


def _read_statements(bucket_arn: str, prefix: str) -> list[dict[str, Any]]:
    return [
        _locate_bucket(bucket_arn),
        {
            "Sid": "ListModels",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}/*", prefix]}},
        },
        {
            "Sid": "ReadModels",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"{bucket_arn}/{prefix}/*",
        },
    ]
