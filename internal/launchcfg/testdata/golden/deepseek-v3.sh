#!/bin/bash
# DeepSeek-V3 (671B, MLA, 256 routed experts and one shared, one MTP layer)
# pre-training with Megatron-LM on 128 nodes of 8 H100 GPUs: tp 2, pp 16 with
# the 61 layers laid out as Megatron-Bridge's H100 recipe lays them (the
# embedding and four layers first, one layer with the MTP layer and the loss
# last), expert parallelism 64, DeepSeek's module recomputation. Arguments as
# Megatron-LM's DeepSeek-V3 examples write them.

NNODES=128
GPUS_PER_NODE=8
TP=2
PP=16
EP=64

torchrun --nproc-per-node=$GPUS_PER_NODE --nnodes=$NNODES --rdzv-backend=c10d \
    --rdzv-endpoint=${MASTER_ADDR:-localhost}:29500 pretrain_gpt.py \
    --distributed-timeout-minutes 60 \
    --tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size $PP \
    --pipeline-model-parallel-layout "Et*4|(t*4|)*14,tmL" \
    --expert-model-parallel-size $EP \
    --expert-tensor-parallel-size 1 \
    --context-parallel-size 1 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --use-mcore-models \
    --transformer-impl transformer_engine \
    --use-flash-attn \
    --disable-bias-linear \
    --micro-batch-size 1 \
    --global-batch-size 8192 \
    --train-samples 585937500 \
    --recompute-granularity selective \
    --recompute-modules mla_up_proj mlp \
    --seq-length 4096 \
    --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model deepseek-ai/DeepSeek-V3 \
    --data-path ${DATA_PATH} \
    --split 99,1,0 \
    --num-layers 61 \
    --hidden-size 7168 \
    --ffn-hidden-size 18432 \
    --num-attention-heads 128 \
    --kv-channels 128 \
    --max-position-embeddings 4096 \
    --position-embedding-type rope \
    --rotary-base 10000 \
    --vocab-size 129280 \
    --make-vocab-size-divisible-by 3232 \
    --normalization RMSNorm \
    --norm-epsilon 1e-6 \
    --swiglu \
    --untie-embeddings-and-output-weights \
    --multi-latent-attention \
    --qk-layernorm \
    --q-lora-rank 1536 \
    --kv-lora-rank 512 \
    --qk-head-dim 128 \
    --qk-pos-emb-head-dim 64 \
    --v-head-dim 128 \
    --rotary-scaling-factor 40 \
    --mscale 1.0 \
    --mscale-all-dim 1.0 \
    --num-experts 256 \
    --moe-layer-freq "([0]*3+[1]*58)" \
    --moe-ffn-hidden-size 2048 \
    --moe-shared-expert-intermediate-size 2048 \
    --moe-router-load-balancing-type seq_aux_loss \
    --moe-router-topk 8 \
    --moe-token-dispatcher-type alltoall \
    --moe-router-pre-softmax \
    --moe-grouped-gemm \
    --moe-aux-loss-coeff 1e-4 \
    --moe-router-group-topk 4 \
    --moe-router-num-groups 8 \
    --moe-router-topk-scaling-factor 2.5 \
    --moe-router-score-function sigmoid \
    --moe-router-enable-expert-bias \
    --moe-router-bias-update-rate 1e-3 \
    --moe-router-dtype fp32 \
    --moe-permute-fusion \
    --mtp-num-layers 1 \
    --mtp-loss-scaling-factor 0.1 \
    --bf16 \
    --lr 3.9e-6 \
    --min-lr 3.9e-7 \
    --lr-decay-style cosine \
    --clip-grad 1.0 \
    --weight-decay 0.1 \
    --adam-beta1 0.9 \
    --adam-beta2 0.95 \
    --init-method-std 0.02 \
    --save /checkpoints/deepseek-v3 \
    --save-interval 500 \
    --log-interval 1 \
    --log-timers-to-tensorboard \
    --tensorboard-dir /logs/deepseek-v3 2>&1 | tee train.log
