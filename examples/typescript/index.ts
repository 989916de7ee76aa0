// One dev environment of llm-platform, composed from TypeScript. The args are the keys of a stack file's
// `llm-platform:` config (docs/configuration.md), validated with the same rules and messages
// before any resource is created; secrets come from Pulumi secrets.
import * as pulumi from "@pulumi/pulumi";
import * as llm from "@pulumi/llm-platform";

const config = new pulumi.Config();

const platform = new llm.LlmPlatform("llm-ts", {
    environment: "dev",
    cluster: {
        mode: "eks",
        name: "llm-ts",
        kubernetesVersion: "1.34",
        vpcCidr: "10.30.0.0/16",
        availabilityZones: ["us-east-1a", "us-east-1b"],
        systemNodes: { instanceType: "m6i.large", min: 2, max: 3 },
        amiVersions: { al2023: "latest" },
    },
    gpuNodePools: [
        {
            name: "gpu-spot",
            instanceFamilies: ["g6", "g5"],
            instanceSizes: ["xlarge", "2xlarge"],
            capacityTypes: ["spot"],
            amiFamily: "al2023",
            gpuLimit: 4,
        },
    ],
    models: [
        {
            name: "qwen-1-5b",
            huggingFaceId: "Qwen/Qwen2.5-1.5B-Instruct",
            nodePool: "gpu-spot",
            tensorParallelSize: 1,
            maxModelLen: 8192,
            cache: "s3",
            autoscaling: { minReplicas: 1, maxReplicas: 2 },
            slo: { ttftSeconds: 0.5, itlSeconds: 0.05 },
        },
    ],
    grafanaAdminPassword: config.requireSecret("grafanaAdminPassword"),
    apiKey: config.requireSecret("apiKey"),
});

export const modelEndpoints = platform.modelEndpoints;
export const kubeconfig = platform.kubeconfig;
